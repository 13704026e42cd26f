package importer

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

const chatGPTFixture = "testdata/chatgpt/conversations.json"

// TestChatGPTGolden pins the whole conversion of a hand-written export with
// the shapes real ones have (a fork from an edited message, custom
// instructions, a browsing tool call, images, voice transcriptions, a
// system-only chat, a missing current_node) to its JSONL.
func TestChatGPTGolden(t *testing.T) {
	t.Parallel()
	in, err := os.ReadFile(chatGPTFixture)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	st, err := ChatGPTToJSONL(bytes.NewReader(in), &out)
	if err != nil {
		t.Fatal(err)
	}
	if st != (ChatGPTStats{Conversations: 3, Turns: 8, Skipped: 1}) {
		t.Errorf("stats %+v", st)
	}
	golden := filepath.Join("testdata", "chatgpt", "conversations.jsonl")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("conversion differs from %s (go test -update to accept):\n%s", golden, out.String())
	}
	// What we write, we read: every line passes the JSONL parser.
	if err := Parse(bytes.NewReader(out.Bytes()), nil); err != nil {
		t.Fatalf("converted output does not parse: %v", err)
	}
}

func TestChatGPTTurns(t *testing.T) {
	t.Parallel()
	f, err := os.Open(chatGPTFixture)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string]Conversation{}
	var order []int
	if _, err := ReadChatGPT(f, func(i int, c Conversation) error {
		got[c.ID] = c
		order = append(order, i)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, []int{1, 2, 4}) {
		t.Errorf("indexes %v, want 1, 2, 4 (3 has no text)", order)
	}
	type turn struct {
		role, text string
		at         time.Time
	}
	cases := []struct {
		id, title string
		want      []turn
	}{
		{"chatgpt-6630f7a0-1c2b-8000-9d3e-2b1f00c0ffee", "Sourdough starter rescue", []turn{
			// Hidden system message and custom instructions left out; the
			// image part dropped, its text kept.
			{"user", "My sourdough starter smells like nail polish remover and has grey liquid on top. Is it dead?", time.UnixMicro(1714554012500000)},
			{"assistant", "Not dead, just hungry. The grey liquid is hooch: pour it off, discard all but 50 g, and feed 1:1:1 twice a day for three days.", time.UnixMicro(1714554020750000)},
			// The edited question (the branch current_node ends on), not
			// the misspelt first one; the browser call and its result gone.
			{"user", "Which flour should I feed it with? I only have all-purpose and some rye.", time.Unix(1714554130, 0)},
			{"assistant", "Use the rye for the next few feeds: it wakes a sluggish starter up faster.\n\nSwitch back to all-purpose once it doubles within 8 hours.", time.UnixMicro(1714554150250000)},
		}},
		{"chatgpt-665b1a20-0000-8000-aaaa-00000000beef", "Voice: Lisbon itinerary", []turn{
			{"user", "I land in Lisbon on Friday at noon, what should I do first?", time.Unix(1717236010, 0)},
			// No create_time: the previous turn's time.
			{"assistant", "Drop your bags, then take tram 28 up to Alfama for lunch.", time.Unix(1717236010, 0)},
		}},
		{"chatgpt-66850000-0000-8000-cccc-000000000000", "Regex for ISO dates", []turn{
			{"user", "Regex for 2024-07-03 style dates?", time.Unix(1720000001, 0)},
			// No current_node: the last (regenerated) answer.
			{"assistant", "`^\\d{4}-\\d{2}-\\d{2}$` matches YYYY-MM-DD; it does not check that the month is 01-12.", time.Unix(1720000042, 0)},
		}},
	}
	for _, tc := range cases {
		c, ok := got[tc.id]
		if !ok {
			t.Errorf("conversation %s missing; got %v", tc.id, keys(got))
			continue
		}
		if c.Title != tc.title {
			t.Errorf("%s: title %q, want %q", tc.id, c.Title, tc.title)
		}
		if len(c.Turns) != len(tc.want) {
			t.Errorf("%s: %d turns, want %d: %+v", tc.id, len(c.Turns), len(tc.want), c.Turns)
			continue
		}
		for i, w := range tc.want {
			g := c.Turns[i]
			if g.Role != w.role || g.Text != w.text || !g.At.Equal(w.at) || g.Speaker != "" {
				t.Errorf("%s turn %d: got %s %q at %v (speaker %q), want %s %q at %v", tc.id, i, g.Role, g.Text, g.At, g.Speaker, w.role, w.text, w.at)
			}
		}
	}
}

func TestChatGPTErrors(t *testing.T) {
	t.Parallel()
	msg := func(id, parent, role, text string, at string) string {
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		return `"` + id + `": {"id": "` + id + `", "parent": ` + p + `, "children": [], "message": {"author": {"role": "` + role +
			`"}, "create_time": ` + at + `, "content": {"content_type": "text", "parts": ["` + text + `"]}, "recipient": "all"}}`
	}
	conv := func(id, current string, nodes ...string) string {
		return `{"id": "` + id + `", "title": "t", "create_time": null, "current_node": "` + current + `", "mapping": {` + strings.Join(nodes, ",") + `}}`
	}
	cases := []struct {
		name, in, want string
	}{
		{"not an array", `{"title": "x"}`, "want a JSON array"},
		{"empty file", ``, "not ChatGPT's conversations.json"},
		{"not JSON", `[{"title": "x",}]`, "conversation 1: not valid JSON"},
		{"title of the wrong type", `[{"title": 5, "mapping": {}}]`, "conversation 1: title: wrong type"},
		{"truncated", `[` + conv("a", "m", msg("m", "", "user", "hi", "1714554012")), "after the last conversation"},
		{"trailing data", `[] []`, "unexpected data after the array"},
		{"no time anywhere", `[` + conv("a", "m", msg("m", "", "user", "hi", "null")) + `]`, `conversation 1 ("t"): a message has no create_time`},
		{"cycle", `[` + conv("a", "m1", msg("m1", "m2", "user", "hi", "1714554012"), msg("m2", "m1", "assistant", "yo", "1714554013")) + `]`, "its own ancestor"},
		{"duplicate id", `[` + conv("a", "m", msg("m", "", "user", "hi", "1714554012")) + `,` + conv("a", "m", msg("m", "", "user", "hi", "1714554012")) + `]`,
			"conversation 2 (\"t\"): the same conversation id as conversation 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ReadChatGPT(strings.NewReader(tc.in), func(int, Conversation) error { return nil })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestChatGPTCallbackErrorStops(t *testing.T) {
	t.Parallel()
	in, err := os.ReadFile(chatGPTFixture)
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	calls := 0
	_, err = ReadChatGPT(bytes.NewReader(in), func(int, Conversation) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("err %v after %d calls, want stop after 1", err, calls)
	}
}

// FuzzReadChatGPT: untrusted exports never panic, and whatever converts
// is valid input for the JSONL parser.
func FuzzReadChatGPT(f *testing.F) {
	if b, err := os.ReadFile(chatGPTFixture); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`[{"mapping": {"a": {"parent": "a", "children": ["a"], "message": null}}, "current_node": "a"}]`))
	f.Add([]byte(`[{"create_time": 1e300, "mapping": {"a": {"message": {"author": {"role": "user"}, "content": {"content_type": "text", "parts": ["x", 1, {}]}}}}}]`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		if _, err := ChatGPTToJSONL(bytes.NewReader(in), &out); err != nil {
			return
		}
		if err := Parse(&out, nil); err != nil {
			t.Fatalf("converted output does not parse: %v", err)
		}
	})
}

func keys(m map[string]Conversation) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
