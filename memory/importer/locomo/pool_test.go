package locomo

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// poolFile has a speaker named like a fake name (so the pool must not hand
// that name out) and names in the text as words, in capitals, possessive
// and inside a longer word.
const poolFile = `[
 {"sample_id": "a", "conversation": {"speaker_a": "Ida", "speaker_b": "Bo",
  "session_1_date_time": "1:56 pm on 8 May, 2023",
  "session_1": [
   {"speaker": "Ida", "dia_id": "D1:1", "text": "Hi Bo! BO, it's Ida's day. Bobby and Idaho stay."},
   {"speaker": "Bo", "dia_id": "D1:2", "text": "Hey Ida."}],
  "session_2_date_time": "2:00 pm on 9 May, 2023",
  "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "Bo again."}]}},
 {"sample_id": "b", "conversation": {"speaker_a": "Cy", "speaker_b": "Di",
  "session_1_date_time": "10:00 am on 1 June, 2023",
  "session_1": [{"speaker": "Cy", "dia_id": "D1:1", "text": "Di, meet Ida."}]}}
]`

func TestPoolDistractors(t *testing.T) {
	t.Parallel()
	file, err := Load(strings.NewReader(poolFile))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		real    int
		k       int
		source  string
		copyN   int
		renamed []string // original names that must be gone from every turn
		kept    []string // words that must stay
	}{
		{"first copy of a", 2, 0, "a", 0, []string{"Ida", "Bo", "BO"}, []string{"Bobby", "Idaho"}},
		{"first copy of b", 2, 1, "b", 0, []string{"Cy", "Di"}, []string{"Ida"}},
		{"second copy of a", 2, 2, "a", 1, []string{"Ida", "Bo", "BO"}, []string{"Bobby", "Idaho"}},
		{"a asked alone: only b is copied", 1, 1, "b", 1, []string{"Cy", "Di"}, nil},
	}
	for _, tc := range cases {
		p := NewPool(file, tc.real)
		for _, n := range p.names {
			if n == "Ida" {
				t.Fatalf("%s: the pool hands out Ida, a speaker of the file", tc.name)
			}
		}
		d := p.Distractor(tc.k)
		if d.Source != tc.source || d.Copy != tc.copyN {
			t.Errorf("%s: copy %d of %s, want copy %d of %s", tc.name, d.Copy, d.Source, tc.copyN, tc.source)
		}
		if d.ShiftDays < minShiftDays || d.ShiftDays >= maxShiftDays {
			t.Errorf("%s: shift %d days", tc.name, d.ShiftDays)
		}
		src := file[0]
		if tc.source == "b" {
			src = file[1]
		}
		if len(d.Conversations) != len(src.Sessions) || d.Turns() != p.Turns(tc.k) {
			t.Fatalf("%s: %d conversations with %d turns (counted %d), want %d sessions", tc.name, len(d.Conversations), d.Turns(), p.Turns(tc.k), len(src.Sessions))
		}
		var all strings.Builder
		for i, c := range d.Conversations {
			if c.User != d.User || c.ID != src.Sessions[i].Key {
				t.Errorf("%s: conversation %q of %q", tc.name, c.ID, c.User)
			}
			for j, turn := range c.Turns {
				orig := src.Sessions[i].Turns[j]
				if got := orig.At.Sub(turn.At); got != time.Duration(d.ShiftDays)*24*time.Hour {
					t.Errorf("%s: turn %d:%d moved back %v, want %d days", tc.name, i, j, got, d.ShiftDays)
				}
				if turn.Speaker == orig.Speaker || turn.Speaker != d.Names[orig.Speaker] || turn.Role != orig.Role {
					t.Errorf("%s: turn %d:%d speaker %q role %s (was %q %s)", tc.name, i, j, turn.Speaker, turn.Role, orig.Speaker, orig.Role)
				}
				all.WriteString(" " + turn.Speaker + " " + turn.Text + " " + c.Title)
			}
		}
		words := strings.FieldsFunc(all.String(), func(r rune) bool { return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') })
		for _, o := range tc.renamed {
			for _, w := range words {
				if w == o {
					t.Errorf("%s: %q still stands as a word: %s", tc.name, o, all.String())
				}
			}
		}
		for _, k := range tc.kept {
			if !strings.Contains(all.String(), k) {
				t.Errorf("%s: %q was changed: %s", tc.name, k, all.String())
			}
		}
		// The same file and copy give byte-identical conversations.
		var a, b bytes.Buffer
		if err := WriteJSONL(&a, d.Conversations); err != nil {
			t.Fatal(err)
		}
		d2 := NewPool(file, tc.real).Distractor(tc.k)
		if err := WriteJSONL(&b, d2.Conversations); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s: two makings differ:\n%s\n%s", tc.name, a.String(), b.String())
		}
	}
}

// TestPoolCopiesDiffer: copies of one sample get other names and dates.
func TestPoolCopiesDiffer(t *testing.T) {
	t.Parallel()
	file, err := Load(strings.NewReader(poolFile))
	if err != nil {
		t.Fatal(err)
	}
	p := NewPool(file, 2)
	shifts, names := map[int]bool{}, map[string]bool{}
	for k := 0; k < 40; k += 2 { // copies 0..19 of sample a
		d := p.Distractor(k)
		shifts[d.ShiftDays] = true
		names[d.Names["Ida"]+"/"+d.Names["Bo"]] = true
	}
	if len(shifts) < 15 || len(names) < 15 {
		t.Errorf("20 copies of one sample: %d shifts, %d name pairs; want nearly all different", len(shifts), len(names))
	}
}
