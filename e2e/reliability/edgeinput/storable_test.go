package edgeinput

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
	"github.com/perpetuity/perpetuity/e2e/rig"
)

const (
	nul     = "\x00"
	badUTF8 = "\xff\xfe" // never valid UTF-8
	// badMark is replaced by badUTF8 in a marshalled body: encoding/json
	// would have turned the bytes into U+FFFD before they were sent.
	badMark = "BADUTF8MARK"
)

// edgeCase is one place client text arrives, with what it must get.
type edgeCase struct {
	name string
	// only, when set, runs the case in that dialect alone.
	only   string
	header map[string]string
	chat   func(mark string) chat
	// identity sends to the tenant whose API user fields are the identity.
	identity bool
	// want is 400 (refused, nothing stored) or 200 (served: the text is
	// not stored, or stored without what it cannot hold).
	want int
	// field is what a refusal must name, per dialect.
	field func(d dialect) string
}

// withHistory is a conversation with a system prompt and one exchange
// before the live question.
func withHistory(mark, live string) chat {
	return chat{system: "You are terse.", history: []turn{{role: "user", text: "earlier " + mark}, {role: "assistant", text: "noted"}}, live: live}
}

// liveField names the live question of withHistory.
func liveField(d dialect) string {
	switch {
	case d.anthropic:
		return "messages[2].content"
	case d.responses:
		return "input[2].content"
	}
	return "messages[3].content"
}

func fixedField(s string) func(dialect) string { return func(dialect) string { return s } }

func edgeCases() []edgeCase {
	return []edgeCase{
		{name: "NUL in the live question", want: 400, field: liveField,
			chat: func(m string) chat { return withHistory(m, "what did I say "+m+nul+"?") }},
		{name: "invalid UTF-8 in the live question", want: 400, field: liveField,
			chat: func(m string) chat { return withHistory(m, "what did I say "+m+badMark+"?") }},
		{name: "NUL in the model", want: 400, field: fixedField("model"),
			chat: func(m string) chat { c := withHistory(m, "hello "+m); c.model = "gpt-4o-mini" + nul; return c }},
		{name: "invalid UTF-8 in X-Perpetuity-User", want: 400, field: fixedField("X-Perpetuity-User"),
			header: map[string]string{"X-Perpetuity-User": "bob" + badUTF8},
			chat:   func(m string) chat { return withHistory(m, "hello "+m) }},
		{name: "invalid UTF-8 in X-Perpetuity-Conversation", want: 400, field: fixedField("X-Perpetuity-Conversation"),
			header: map[string]string{"X-Perpetuity-Conversation": "trip" + badUTF8},
			chat:   func(m string) chat { return withHistory(m, "hello "+m) }},
		{name: "NUL in the user field, the identity", identity: true, want: 400,
			field: func(d dialect) string {
				if d.anthropic {
					return "metadata.user_id"
				}
				return "user"
			},
			chat: func(m string) chat { c := withHistory(m, "hello "+m); c.hint = "carol" + nul; return c }},
		{name: "invalid UTF-8 in the user field, the identity", identity: true, want: 400,
			field: func(d dialect) string {
				if d.anthropic {
					return "metadata.user_id"
				}
				return "user"
			},
			chat: func(m string) chat { c := withHistory(m, "hello "+m); c.hint = "carol" + badMark; return c }},
		{name: "NUL in Responses conversation", only: "openai-responses", want: 400, field: fixedField("conversation"),
			chat: func(m string) chat { c := withHistory(m, "hello "+m); c.session = "conv_" + nul; return c }},
		// Not stored, so served: the history a harness resends must not
		// lock it out of a conversation whose first question was refused.
		{name: "NUL in an earlier user message", want: 200,
			chat: func(m string) chat {
				return chat{history: []turn{{role: "user", text: "first " + m + nul}, {role: "assistant", text: "noted"}}, live: "and now " + m}
			}},
		{name: "NUL in an assistant turn", want: 200,
			chat: func(m string) chat {
				return chat{history: []turn{{role: "user", text: "first " + m}, {role: "assistant", text: "noted" + nul}}, live: "and now " + m}
			}},
		{name: "NUL in the system prompt", want: 200,
			chat: func(m string) chat { c := withHistory(m, "hello "+m); c.system = "be terse" + nul; return c }},
		{name: "NUL in a tool result", want: 200,
			chat: func(m string) chat {
				return chat{history: []turn{{role: "user", text: "read the file " + m}, {text: "binary\x00data", toolResult: true}}, live: "what was in it " + m}
			}},
		{name: "NUL in the user field, a hint only", want: 200,
			chat: func(m string) chat { c := withHistory(m, "hello "+m); c.hint = "session" + nul; return c }},
		{name: "probe: NUL in the first user message", want: 200, header: map[string]string{"X-Perpetuity-Mode": "probe"},
			chat: func(m string) chat {
				return chat{history: []turn{{role: "user", text: "first " + m + nul}, {role: "assistant", text: "noted"}}, live: "and now " + m}
			}},
	}
}

// outcome tallies one run of a case.
type outcome struct {
	dialect, cse string
	status       int
	ok           bool
	why          string
}

func TestStorableInput(t *testing.T) {
	w := startWorld(t)
	plain := rig.CreateTenant(t, w.env, "edge plain", "--scope", "tenant")
	ident := rig.CreateTenant(t, w.env, "edge identity", "--scope", "tenant")
	w.exec(`UPDATE tenants SET user_field_identity = true WHERE id = $1`, ident.TenantID)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	var outs []outcome
	var served [2]int64 // requests each tenant got answered, to wait for their records
	rounds := figure.N(3, 1)
	for round := 0; round < rounds; round++ {
		for _, d := range dialects {
			for _, c := range edgeCases() {
				if c.only != "" && c.only != d.name {
					continue
				}
				tn, slot := plain, 0
				if c.identity {
					tn, slot = ident, 1
				}
				w.settled(tn.TenantID, served[slot])
				mark := fmt.Sprintf("edge-%d-%d", round, len(outs))
				body := []byte(mustJSON(c.chat(mark).body(d)))
				body = bytes.ReplaceAll(body, []byte(badMark), []byte(badUTF8))
				before := w.rows(tn.TenantID)
				fwd := w.forwardedWith(mark)
				a := w.post(ctx, tn.Key, d, c.header, body)
				o := outcome{dialect: d.name, cse: c.name, status: a.status, ok: true}
				fail := func(f string, args ...any) {
					o.ok = false
					o.why += fmt.Sprintf(f, args...) + "; "
				}
				switch {
				case a.err != nil:
					fail("transport: %v", a.err)
				case a.status != c.want:
					fail("status %d, want %d: %s", a.status, c.want, a.body)
				case c.want == 400:
					typ, msg, shaped := dialectError(d, a.body)
					if !shaped || typ != "invalid_request_error" {
						fail("not the dialect's invalid_request_error: %s", a.body)
					}
					if f := c.field(d); !strings.Contains(msg, f) {
						fail("message %q does not name %s", msg, f)
					}
					if after := w.rows(tn.TenantID); after != before {
						fail("rows changed: %+v -> %+v", before, after)
					}
					if n := w.forwardedWith(mark) - fwd; n != 0 {
						fail("forwarded %d times", n)
					}
				default:
					served[slot]++
				}
				if a.status >= 500 || bytes.Contains(a.body, []byte("overloaded")) {
					fail("a server error for client input: %d %s", a.status, a.body)
				}
				if !o.ok {
					t.Errorf("%s, %s: %s", d.name, c.name, o.why)
				}
				outs = append(outs, o)
			}
		}
	}

	// After a refusal the conversation goes on with clean input: by name,
	// and with the refused question still in the history a harness resends.
	usable := 0
	for _, d := range dialects {
		ok, n := afterRefusal(ctx, t, w, plain, d)
		served[0] += n
		if ok {
			usable++
		}
	}
	w.settled(plain.TenantID, served[0])

	sdkOK, sdkN := sdkRefusals(ctx, t, w, plain)
	importOK, importN := importRefusals(ctx, t, w, plain)

	refused, accepted, good, fiveXX := 0, 0, 0, 0
	for _, o := range outs {
		if o.status == 400 {
			refused++
		} else if o.status == 200 {
			accepted++
		}
		if o.status >= 500 {
			fiveXX++
		}
		if o.ok {
			good++
		}
	}
	pass := good == len(outs) && usable == len(dialects) && sdkOK == sdkN && importOK == importN && fiveXX == 0
	figure.Record(t, figure.Figure{
		Item: 109,
		Name: "Client text PostgreSQL cannot hold",
		Figure: fmt.Sprintf("%d/%d requests answered as their case requires in 3 dialects (%d refused with 400 in the dialect naming the field, rows and provider untouched; %d served); %d 5xx; "+
			"a conversation usable after a refusal in %d/%d dialects; official SDKs: %d/%d refusals as invalid_request_error; import: %d/%d refused with 400",
			good, len(outs), refused, accepted, fiveXX, usable, len(dialects), sdkOK, sdkN, importOK, importN),
		Target: "a NUL (U+0000) or invalid UTF-8 where Perpetuity would store or name it (live question, model, user and conversation headers, the user field when it is the identity, Responses conversation) is a 400 in the caller's dialect naming the field, with no row written and nothing forwarded; never a 5xx or overloaded_error; the same conversation works afterwards",
		Pass:   pass,
		Details: "each case sent as raw HTTP (NUL as \\u0000, invalid UTF-8 as raw 0xFF 0xFE bytes) through /v1/chat/completions, /v1/messages and /v1/responses; rows of memory_users, conversations, messages and items counted at the database before and after every refusal; " +
			"text that is never stored (earlier history, assistant turns, system prompt, tool results, a user field that is only a hint) is served, so a harness that keeps a refused question in its history is not locked out of the conversation",
	})
	if !pass {
		t.Fatal("client input PostgreSQL cannot hold was not refused cleanly")
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// afterRefusal: a refused question, then the same conversation with clean
// input, named by header and derived from the first message.
func afterRefusal(ctx context.Context, t *testing.T, w *world, tn rig.Tenant, d dialect) (ok bool, served int64) {
	t.Helper()
	ok = true
	conv := "after-" + d.name
	h := map[string]string{"X-Perpetuity-Conversation": conv}
	if a := w.post(ctx, tn.Key, d, h, chat{live: "broken " + nul}.body(d)); a.status != 400 {
		t.Errorf("%s: NUL question by name: %d %s", d.name, a.status, a.body)
		ok = false
	}
	if a := w.post(ctx, tn.Key, d, h, chat{live: "clean question for " + conv}.body(d)); a.status != 200 {
		t.Errorf("%s: clean question after a refusal: %d %s", d.name, a.status, a.body)
		ok = false
	} else {
		served++
	}
	first := "my first words for " + d.name
	if a := w.post(ctx, tn.Key, d, nil, chat{live: first + nul}.body(d)); a.status != 400 {
		t.Errorf("%s: NUL first question: %d %s", d.name, a.status, a.body)
		ok = false
	}
	// The harness kept the refused question and asks again after it.
	kept := chat{history: []turn{{role: "user", text: first + nul}, {role: "assistant", text: "(error)"}}, live: "again, cleanly, " + d.name}
	if a := w.post(ctx, tn.Key, d, nil, kept.body(d)); a.status != 200 {
		t.Errorf("%s: the kept history after a refusal: %d %s", d.name, a.status, a.body)
		ok = false
	} else {
		served++
	}
	if a := w.post(ctx, tn.Key, d, nil, chat{live: first}.body(d)); a.status != 200 {
		t.Errorf("%s: the clean first question: %d %s", d.name, a.status, a.body)
		ok = false
	} else {
		served++
	}
	stored := false
	deadline := time.Now().Add(10 * time.Second)
	for !stored && time.Now().Before(deadline) {
		for _, s := range w.strings(`SELECT i.body FROM items i JOIN conversations c ON c.tenant_id = i.tenant_id AND c.id = i.conversation_id
			WHERE c.tenant_id = $1 AND c.ext_key = $2`, tn.TenantID, "h:"+conv) {
			if strings.Contains(s, "clean question for "+conv) {
				stored = true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !stored {
		t.Errorf("%s: the clean question after the refusal was not stored in conversation %s", d.name, conv)
		ok = false
	}
	return ok, served
}

// sdkRefusals sends what the official SDKs can carry: a NUL in the live
// question, invalid UTF-8 in the user header.
func sdkRefusals(ctx context.Context, t *testing.T, w *world, tn rig.Tenant) (ok, n int) {
	t.Helper()
	base := w.proc.URL + "/k/" + tn.Key
	oc := openai.NewClient(ooption.WithBaseURL(base+"/v1"), ooption.WithAPIKey("sk-proj-edge"), ooption.WithMaxRetries(0))
	ac := anthropic.NewClient(aoption.WithBaseURL(base), aoption.WithAPIKey("sk-ant-edge"), aoption.WithMaxRetries(0))
	check := func(name string, status int, typ string, err error) {
		n++
		if status == http.StatusBadRequest && typ == "invalid_request_error" {
			ok++
			return
		}
		t.Errorf("SDK %s: status %d type %q err %v", name, status, typ, err)
	}
	fromOpenAI := func(err error) (int, string) {
		var ae *openai.Error
		if errors.As(err, &ae) {
			return ae.StatusCode, ae.Type
		}
		return 0, ""
	}
	fromAnthropic := func(err error) (int, string) {
		var ae *anthropic.Error
		if errors.As(err, &ae) {
			return ae.StatusCode, string(ae.Type())
		}
		return 0, ""
	}
	for _, v := range []struct {
		name, text string
		header     string
	}{{"NUL in the question", "sdk question " + nul, ""}, {"invalid UTF-8 in X-Perpetuity-User", "sdk question", "dave" + badUTF8}} {
		var oopts []ooption.RequestOption
		var aopts []aoption.RequestOption
		if v.header != "" {
			oopts = append(oopts, ooption.WithHeader("X-Perpetuity-User", v.header))
			aopts = append(aopts, aoption.WithHeader("X-Perpetuity-User", v.header))
		}
		_, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(v.text)}}, oopts...)
		s, typ := fromOpenAI(err)
		check("openai chat, "+v.name, s, typ, err)
		_, err = ac.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 32,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(v.text))}}, aopts...)
		s, typ = fromAnthropic(err)
		check("anthropic messages, "+v.name, s, typ, err)
		_, err = oc.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-4o-mini",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(v.text)}}, oopts...)
		s, typ = fromOpenAI(err)
		check("openai responses, "+v.name, s, typ, err)
	}
	return ok, n
}

// importRefusals: the import endpoint refuses the same input with a 400,
// importing nothing.
func importRefusals(ctx context.Context, t *testing.T, w *world, tn rig.Tenant) (ok, n int) {
	t.Helper()
	imp := dialect{name: "import", path: "/perpetuity/import"}
	for _, v := range []struct {
		name   string
		header map[string]string
		body   string
	}{
		{"NUL in a turn", nil, `{"conversation":"imp-nul","turns":[{"role":"user","text":"a\u0000b","at":"2024-01-01T00:00:00Z"}]}` + "\n"},
		{"NUL in the user", nil, `{"conversation":"imp-user","user":"x\u0000","turns":[{"role":"user","text":"ab","at":"2024-01-01T00:00:00Z"}]}` + "\n"},
		{"invalid UTF-8 in a line", nil, "{\"conversation\":\"imp-utf\",\"turns\":[{\"role\":\"user\",\"text\":\"a\xffb\",\"at\":\"2024-01-01T00:00:00Z\"}]}\n"},
		{"invalid UTF-8 in X-Perpetuity-User", map[string]string{"X-Perpetuity-User": "erin" + badUTF8},
			`{"conversation":"imp-hdr","turns":[{"role":"user","text":"ab","at":"2024-01-01T00:00:00Z"}]}` + "\n"},
	} {
		n++
		before := w.rows(tn.TenantID)
		a := w.post(ctx, tn.Key, imp, v.header, []byte(v.body))
		after := w.rows(tn.TenantID)
		if a.status == http.StatusBadRequest && after == before {
			ok++
			continue
		}
		t.Errorf("import, %s: %d %s (rows %+v -> %+v)", v.name, a.status, a.body, before, after)
	}
	return ok, n
}
