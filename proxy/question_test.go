package proxy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/dialect"
)

// TestQuestionOf: the live message's harness scaffolding parts are left
// out of what memory stores only beside a part that says something, and
// a part with a cache breakpoint is the user's.
func TestQuestionOf(t *testing.T) {
	t.Parallel()
	const reminder = `{"type":"text","text":"<system-reminder>\n# claudeMd\nRun go test.\n</system-reminder>"}`
	cases := []struct {
		name, content, want string
		scaffold            bool
	}{
		{"a string", `"<system-reminder>x</system-reminder> fix it"`, "<system-reminder>x</system-reminder> fix it", false},
		{"one part", `[{"type":"text","text":"fix it"}]`, "fix it", false},
		{"a reminder beside the prompt", `[` + reminder + `,{"type":"text","text":"fix it"}]`, "fix it", true},
		{"the prompt first", `[{"type":"text","text":"fix it"},` + reminder + `]`, "fix it", true},
		{"a reminder alone", `[` + reminder + `]`, "<system-reminder>\n# claudeMd\nRun go test.\n</system-reminder>", false},
		{"a reminder and an image", `[` + reminder + `,{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]`,
			"<system-reminder>\n# claudeMd\nRun go test.\n</system-reminder>", false},
		// Decided on the text alone: the breakpoint moves between a tool
		// loop's rounds, the question must not.
		{"a reminder with a cache breakpoint", `[{"type":"text","text":"fix it"},{"type":"text","text":"<system-reminder>x</system-reminder>","cache_control":{"type":"ephemeral"}}]`,
			"fix it", true},
		{"two prompts and a reminder", `[{"type":"text","text":"fix it"},` + reminder + `,{"type":"text","text":"then test"}]`, "fix it\nthen test", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			in, err := parseInbound(dialect.AnthropicMessages, []byte(`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":`+c.content+`}]}`))
			if err != nil {
				t.Fatal(err)
			}
			if in.question != c.want || in.liveScaffold != c.scaffold {
				t.Fatalf("question %q (scaffold %v), want %q (%v)", in.question, in.liveScaffold, c.want, c.scaffold)
			}
		})
	}
}

// TestScaffoldSentOnceStoredNever: Claude Code's CLAUDE.md reminder beside
// the first prompt reaches the provider once on every request (with the
// live message first, kept from the history after) and is not stored with
// the prompt, so the frame never quotes it a second time.
func TestScaffoldSentOnceStoredNever(t *testing.T) {
	t.Parallel()
	const session = "019ad0f1-7c2e-7d41-9a5e-1f2b3c4d5e6f"
	const rule = "Run go test before committing."
	tp := newTestProxy(t)
	reqs := []string{
		claudeCodeBody(t, session, "fix the failing test"),
		claudeCodeBody(t, session, "fix the failing test", "Fixed.", "now run the linter"),
	}
	for i, body := range reqs {
		tp.anthropic.Script(fakeprovider.Reply{Text: "Fixed."})
		if status, _, got := tp.post("/v1/messages", body, claudeCodeHeaders(session)...); status != 200 {
			t.Fatalf("request %d: %d %s", i+1, status, got)
		}
		tp.settle(i + 1)
		sent := tp.anthropic.Requests()
		if n := strings.Count(string(sent[len(sent)-1].Body), rule); n != 1 {
			t.Fatalf("request %d reached the provider with the reminder %d times:\n%s", i+1, n, sent[len(sent)-1].Body)
		}
	}
	for _, m := range tp.mem.Stored() {
		if strings.Contains(m.Text, rule) {
			t.Fatalf("stored with the reminder: %q", m.Text)
		}
	}
	if st := tp.mem.Stored(); len(st) == 0 || st[0].Text != "fix the failing test" {
		t.Fatalf("stored %+v", st)
	}
}

// TestQuestionSameEveryRound: Claude Code moves its cache breakpoint to the
// newest block each round of a tool loop, off the question's reminder and
// onto the tool result; the question memory keeps (its fingerprint, the
// loop's kept frame) is the same in every round, and the reminder reaches
// the provider with the live message each round, its breakpoint with it
// in the round that had one.
func TestQuestionSameEveryRound(t *testing.T) {
	t.Parallel()
	const todo = `{"type":"text","text":"<system-reminder>\nThe todo list is empty.\n</system-reminder>"%s}`
	const bp = `,"cache_control":{"type":"ephemeral"}`
	live := func(breakpoint string) string {
		return `{"role":"user","content":[{"type":"text","text":"fix the failing test"},` + fmt.Sprintf(todo, breakpoint) + `]}`
	}
	rounds := []string{
		`{"model":"m","max_tokens":9,"messages":[` + live(bp) + `]}`,
		`{"model":"m","max_tokens":9,"messages":[` + live("") + `,{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok","cache_control":{"type":"ephemeral"}}]}]}`,
	}
	frame := &memory.Frame{Turns: []memory.Turn{{Role: "user", Text: "【now】\nfix the failing test"}}}
	for i, body := range rounds {
		in, err := parseInbound(dialect.AnthropicMessages, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if in.question != "fix the failing test" || !in.liveScaffold {
			t.Fatalf("round %d: question %q (scaffold %v)", i+1, in.question, in.liveScaffold)
		}
		out, err := renderFrame(in, frame)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(out), "The todo list is empty."); n != 1 {
			t.Fatalf("round %d forwarded the reminder %d times: %s", i+1, n, out)
		}
		if want := strings.Count(body, "cache_control"); strings.Count(string(out), "cache_control") != want {
			t.Fatalf("round %d forwarded %d breakpoints, the harness sent %d: %s", i+1, strings.Count(string(out), "cache_control"), want, out)
		}
	}
}
