package locomo

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/importer"
)

func TestEvidenceIDs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   []string
		want string
	}{
		{[]string{"D1:3"}, "[D1:3]"},
		{[]string{"D30:05"}, "[D30:5]"},
		{[]string{"D:11:26"}, "[D11:26]"},
		{[]string{"D8:6; D9:17"}, "[D8:6 D9:17]"},
		{[]string{"D1:2 D1:4  D2:1"}, "[D1:2 D1:4 D2:1]"},
		{[]string{"D"}, "[]"},
		{[]string{""}, "[]"},
		{[]string{"D1:3", "D 2 : 4"}, "[D1:3 D2:4]"},
		{[]string{"D99999999999999999999:1"}, "[]"},
	}
	for _, tc := range cases {
		if got := fmt.Sprint(EvidenceIDs(tc.in...)); got != tc.want && !(tc.want == "[]" && got == "[]") {
			t.Errorf("EvidenceIDs(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestParseDateTime(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"1:56 pm on 8 May, 2023", time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC), true},
		{"7:00 PM on 9 June 2023", time.Date(2023, 6, 9, 19, 0, 0, 0, time.UTC), true},
		{"10:04 am on 20 January, 2023", time.Date(2023, 1, 20, 10, 4, 0, 0, time.UTC), true},
		{"12:09 am on 13 September,  2023", time.Date(2023, 9, 13, 0, 9, 0, 0, time.UTC), true},
		{"soon", time.Time{}, false},
		{"", time.Time{}, false},
	}
	for _, tc := range cases {
		got, ok := ParseDateTime(tc.in)
		if ok != tc.ok || !got.Equal(tc.want) {
			t.Errorf("ParseDateTime(%q) = %v %v, want %v %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func loadFixture(t *testing.T) []Sample {
	t.Helper()
	f, err := os.Open("testdata/defects.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLoadDefects(t *testing.T) {
	t.Parallel()
	samples := loadFixture(t)
	if len(samples) != 2 || samples[0].ID != "s-1" || samples[1].ID != "s-2" {
		t.Fatalf("samples %+v", samples)
	}
	s := samples[0]
	var sess []string
	for _, x := range s.Sessions {
		sess = append(sess, fmt.Sprintf("%s:%d@%s", x.Key, len(x.Turns), x.At.Format(time.RFC3339)))
	}
	// session_3 has a date and no turns; session_4 has turns and no date
	// (the day after session_2); D1:4 is empty and skipped.
	want := "[session_1:3@2023-05-08T13:56:00Z session_2:2@2023-06-09T19:00:00Z session_4:1@2023-06-10T19:00:00Z]"
	if fmt.Sprint(sess) != want {
		t.Fatalf("sessions %v\nwant %s", sess, want)
	}
	img, ok := s.Turn("D1:3")
	if !ok || img.Text != `A blue bowl "with" two handles. [shares an image: a photo of a blue bowl on a table]` ||
		img.Role != "user" || img.Speaker != "Caroline" || !img.At.Equal(time.Date(2023, 5, 8, 13, 58, 0, 0, time.UTC)) {
		t.Fatalf("image turn %+v", img)
	}
	if mel, _ := s.Turn("D2:1"); mel.Role != "assistant" || mel.Speaker != "Melanie" {
		t.Fatalf("speaker_b turn %+v", mel)
	}
	if _, ok := s.Turn("D1:4"); ok {
		t.Fatal("the empty turn is importable")
	}
	var qs []string
	for _, q := range s.Questions {
		qs = append(qs, fmt.Sprintf("%d:c%d:%v-%v", q.Index, q.Category, q.Evidence, q.Dropped))
	}
	wantQ := "[0:c1:[D1:3 D2:1]-[] 1:c2:[D1:1]-[] 2:c4:[D2:2]-[] 3:c3:[D1:2 D2:1]-[] 4:c4:[D1:1 D1:3]-[] " +
		"5:c4:[]-[] 6:c1:[]-[D9:9] 7:c4:[]-[] 8:c5:[D2:2]-[] 9:c4:[D4:1]-[D1:4]]"
	if fmt.Sprint(qs) != wantQ {
		t.Fatalf("questions\n%v\nwant\n%s", qs, wantQ)
	}
}

func TestConversationsImport(t *testing.T) {
	t.Parallel()
	samples := loadFixture(t)
	var buf bytes.Buffer
	for i := range samples {
		if err := WriteJSONL(&buf, samples[i].Conversations()); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	err := importer.Parse(&buf, func(_ int, c importer.Conversation) error {
		got = append(got, fmt.Sprintf("%s/%s:%d", c.User, c.ID, len(c.Turns)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[s-1/session_1:3 s-1/session_2:2 s-1/session_4:1 s-2/session_1:3]" {
		t.Fatalf("conversations %v", got)
	}
}

func TestLoadOddShapes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in, want string
	}{
		{"single object", `{"sample_id": "x", "conversation": {"session_1": [{"speaker": "A", "text": "hi"}]}}`, "x:1"},
		{"duplicate ids", `[{"sample_id": "x"}, {"sample_id": "x"}, {}]`, "x:0 x#2:0 sample-3:0"},
		{"numeric id", `[{"sample_id": 7, "conversation": {"session_1": "oops", "session_2": [{"text": "a"}, 5]}}]`, "7:1"},
		{"evidence as string", `[{"sample_id": "e", "conversation": {"session_1": [{"text": "a"}]}, "qa": [{"question": "q?", "evidence": "D1:1", "category": "4"}]}]`, "e:1"},
	}
	for _, tc := range cases {
		s, err := Load(strings.NewReader(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, x := range s {
			n := 0
			for _, ss := range x.Sessions {
				n += len(ss.Turns)
			}
			got = append(got, fmt.Sprintf("%s:%d", x.ID, n))
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, got, tc.want)
		}
	}
	s, _ := Load(strings.NewReader(cases[3].in))
	if q := s[0].Questions; len(q) != 1 || q[0].Category != 4 || fmt.Sprint(q[0].Evidence) != "[D1:1]" {
		t.Fatalf("loose question %+v", q)
	}
	if _, err := Load(strings.NewReader(`[1, 2]`)); err == nil {
		t.Fatal("samples that are not objects must be an error")
	}
}

// FuzzLoad: whatever the file, Load does not panic, evidence names only
// existing turns, and every sample's conversations pass the importer.
func FuzzLoad(f *testing.F) {
	b, err := os.ReadFile("testdata/defects.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(b))
	f.Add(`{"sample_id": "\u0000", "conversation": {"speaker_b": "A", "session_01": [{"speaker": "A", "dia_id": "D1:1", "text": "x\u0000"}], "session_1": [{"dia_id": "D1:1", "blip_caption": "c"}]}, "qa": [{"question": "q", "evidence": ["D1:1; D:1:1"]}]}`)
	f.Fuzz(func(t *testing.T, in string) {
		samples, err := Load(strings.NewReader(in))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		for i := range samples {
			s := &samples[i]
			for _, q := range s.Questions {
				for _, id := range q.Evidence {
					if _, ok := s.Turn(id); !ok {
						t.Fatalf("evidence %s names no turn", id)
					}
				}
			}
			if err := WriteJSONL(&buf, s.Conversations()); err != nil {
				t.Fatal(err)
			}
		}
		if err := importer.Parse(&buf, nil); err != nil {
			t.Fatalf("importer rejects what Load made: %v", err)
		}
	})
}
