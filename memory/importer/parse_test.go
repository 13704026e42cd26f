package importer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseGood(t *testing.T) {
	t.Parallel()
	in := "\ufeff" + `{"conversation": "c1", "title": "T", "user": "caroline", "turns": [` +
		`{"role": "user", "speaker": "Caroline", "text": "Hey Mel!\nline two", "at": "2023-05-08T13:56:00Z"},` +
		`{"role": "assistant", "speaker": "Melanie", "text": "Hi \"you\" ☀", "at": "2023-05-08T15:57:00+02:00"}]}` + "\r\n" +
		"\n   \n" +
		`{"conversation": "c2", "turns": [{"role": "user", "text": "only", "at": "2024-01-02T03:04:05.123Z"}]}`
	var got []Conversation
	var lines []int
	err := Parse(strings.NewReader(in), func(n int, c Conversation) error {
		lines = append(lines, n)
		got = append(got, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(lines) != "[1 4]" {
		t.Fatalf("line numbers %v, want [1 4]", lines)
	}
	want := []Conversation{
		{ID: "c1", Title: "T", User: "caroline", Turns: []Turn{
			{Role: "user", Speaker: "Caroline", Text: "Hey Mel!\nline two", At: time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)},
			{Role: "assistant", Speaker: "Melanie", Text: `Hi "you" ☀`, At: time.Date(2023, 5, 8, 13, 57, 0, 0, time.UTC)},
		}},
		{ID: "c2", Turns: []Turn{{Role: "user", Text: "only", At: time.Date(2024, 1, 2, 3, 4, 5, 123e6, time.UTC)}}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d conversations, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Title != w.Title || g.User != w.User || len(g.Turns) != len(w.Turns) {
			t.Fatalf("conversation %d: got %+v, want %+v", i, g, w)
		}
		for j := range w.Turns {
			gt, wt := g.Turns[j], w.Turns[j]
			if gt.Role != wt.Role || gt.Speaker != wt.Speaker || gt.Text != wt.Text || !gt.At.Equal(wt.At) {
				t.Errorf("conversation %d turn %d: got %+v, want %+v", i, j, gt, wt)
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	good := `{"conversation": "ok", "turns": [{"role": "user", "text": "hi", "at": "2023-05-08T13:56:00Z"}]}`
	turn := func(fields string) string {
		return `{"conversation": "x", "turns": [{"role": "user", "text": "hi", "at": "2023-05-08T13:56:00Z"}, {` + fields + `}]}`
	}
	cases := []struct {
		name string
		bad  string
		want string
	}{
		{"bad json", `{"conversation": "x", "turns": [}`, "not valid JSON at byte"},
		{"truncated", `{"conversation": "x"`, "ends inside a value"},
		{"not an object", `[1, 2]`, "want a conversation object"},
		{"null", `null`, "got null"},
		{"two values", good + " " + good, "more than one JSON value"},
		{"trailing junk", good + " ]", "unexpected data"},
		{"unknown field", `{"conversation": "x", "turn": []}`, `unknown field "turn"`},
		{"unknown turn field", turn(`"role": "user", "text": "a", "at": "2023-05-08T13:56:00Z", "time": 1`), `unknown field "time"`},
		{"missing id", `{"turns": [{"role": "user", "text": "a", "at": "2023-05-08T13:56:00Z"}]}`, "conversation: required"},
		{"no turns", `{"conversation": "x", "turns": []}`, "turns: required"},
		{"missing text", turn(`"role": "user", "at": "2023-05-08T13:56:00Z"`), "turns[1].text: required"},
		{"blank text", turn(`"role": "user", "text": " \n", "at": "2023-05-08T13:56:00Z"`), "turns[1].text: required"},
		{"nul text", turn(`"role": "user", "text": "a\u0000b", "at": "2023-05-08T13:56:00Z"`), "turns[1].text: contains a NUL"},
		{"missing role", turn(`"text": "a", "at": "2023-05-08T13:56:00Z"`), `turns[1].role: "" is not`},
		{"bad role", turn(`"role": "system", "text": "a", "at": "2023-05-08T13:56:00Z"`), `turns[1].role: "system" is not`},
		{"missing at", turn(`"role": "user", "text": "a"`), "turns[1].at: required"},
		{"bad at", turn(`"role": "user", "text": "a", "at": "8 May 2023"`), `turns[1].at: "8 May 2023" is not an RFC 3339 time`},
		{"wrong type", turn(`"role": "user", "text": 5, "at": "2023-05-08T13:56:00Z"`), "turns.text: wrong type (JSON number)"},
		{"long id", `{"conversation": "` + strings.Repeat("x", MaxNameBytes+1) + `", "turns": [{"role": "user", "text": "a", "at": "2023-05-08T13:56:00Z"}]}`, "conversation: longer than 200 bytes"},
		{"repeated id", good, `conversation "ok" already appeared on line 1`},
		{"invalid utf8", "{\"conversation\": \"x\xff\", \"turns\": []}", "not valid UTF-8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The bad line is line 3: a good line and a blank line come first.
			in := good + "\n\n" + tc.bad + "\n" + `{"conversation": "after", "turns": [{"role": "user", "text": "a", "at": "2023-05-08T13:56:00Z"}]}` + "\n"
			var seen []int
			err := Parse(strings.NewReader(in), func(n int, _ Conversation) error { seen = append(seen, n); return nil })
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("err = %v, want a *LineError", err)
			}
			if le.Line != 3 {
				t.Errorf("line = %d, want 3 (%v)", le.Line, err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "line 3: ") {
				t.Errorf("error %q, want it to start with \"line 3: \" and contain %q", err, tc.want)
			}
			if fmt.Sprint(seen) != "[1]" {
				t.Errorf("fn called for lines %v, want only [1]", seen)
			}
		})
	}
}

func TestParseLineTooLong(t *testing.T) {
	t.Parallel()
	in := strings.Repeat(" ", MaxLineBytes+10) + "\n"
	err := Parse(strings.NewReader(in), nil)
	var le *LineError
	if !errors.As(err, &le) || le.Line != 1 || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("err = %v, want line 1 too long", err)
	}
}

func TestParseCallbackError(t *testing.T) {
	t.Parallel()
	in := `{"conversation": "a", "turns": [{"role": "user", "text": "a", "at": "2023-05-08T13:56:00Z"}]}` + "\n" +
		`{"conversation": "b", "turns": [{"role": "user", "text": "a", "at": "2023-05-08T13:56:00Z"}]}`
	boom := errors.New("boom")
	err := Parse(strings.NewReader(in), func(n int, _ Conversation) error {
		if n == 2 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || err.Error() != "line 2: boom" {
		t.Fatalf("err = %v, want line 2: boom", err)
	}
	var le *LineError
	if errors.As(err, &le) {
		t.Fatalf("a callback failure is not bad input, got *LineError")
	}
}

// FuzzParse holds Parse to its contract on arbitrary input: no panic, line
// numbers increase, every accepted conversation is valid and survives a
// round trip through its own JSON encoding.
func FuzzParse(f *testing.F) {
	f.Add(`{"conversation": "c", "title": "t", "user": "u", "turns": [{"role": "user", "speaker": "S", "text": "hi", "at": "2023-05-08T13:56:00Z"}]}`)
	f.Add("{\"conversation\": \"c\", \"turns\": [{\"role\": \"assistant\", \"text\": \"x\", \"at\": \"2023-05-08T13:56:00+02:00\"}]}\n\n{")
	f.Add(`{"conversation": "c", "turns": [{"role": "user", "text": "a\u0000", "at": "x"}]}`)
	f.Add("\ufeff[]\r\nnull\n")
	f.Fuzz(func(t *testing.T, in string) {
		last := 0
		_ = Parse(strings.NewReader(in), func(n int, c Conversation) error {
			if n <= last {
				t.Fatalf("line %d after %d", n, last)
			}
			last = n
			if c.ID == "" || len(c.ID) > MaxNameBytes || len(c.Turns) == 0 {
				t.Fatalf("accepted bad conversation %+v", c)
			}
			for _, tu := range c.Turns {
				if (tu.Role != "user" && tu.Role != "assistant") || strings.TrimSpace(tu.Text) == "" || tu.At.IsZero() {
					t.Fatalf("accepted bad turn %+v", tu)
				}
				if strings.ContainsRune(tu.Text, 0) {
					t.Fatalf("accepted NUL in %q", tu.Text)
				}
			}
			b, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			var again []Conversation
			if err := Parse(strings.NewReader(string(b)), func(_ int, c2 Conversation) error { again = append(again, c2); return nil }); err != nil {
				t.Fatalf("re-parse of %s: %v", b, err)
			}
			if len(again) != 1 || again[0].ID != c.ID || len(again[0].Turns) != len(c.Turns) {
				t.Fatalf("round trip changed %+v into %+v", c, again)
			}
			for i := range c.Turns {
				if again[0].Turns[i].Text != c.Turns[i].Text || !again[0].Turns[i].At.Equal(c.Turns[i].At) {
					t.Fatalf("round trip changed turn %d", i)
				}
			}
			return nil
		})
	})
}
