package proxy

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/proxy/dialect"
)

const responsesIn = `{"model":"gpt-4.1","instructions":"Be brief.","store":false,"input":[` +
	`{"role":"developer","content":"Answer in English."},` +
	`{"role":"user","content":"Hi, I am ada."},` +
	`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"HARNESS COPY THAT WAS NEVER SAID"}]},` +
	`{"role":"user","content":[{"type":"input_text","text":"What is my cat called?"}]}]%s}`

// TestResponses: the Responses API relays to OpenAI-compatible providers
// with the frame in place of the input history, streaming and not, and
// captures the reply from the provider's own events.
func TestResponses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body, provider string
		reply                fakeprovider.Reply
		wantStored           []string
	}{
		{"text", with(responsesIn, ""), "openai", fakeprovider.Reply{Text: "Miso."}, []string{"What is my cat called?", "Miso."}},
		{"text_stream", with(responsesIn, `,"stream":true`), "openai", fakeprovider.Reply{Text: "Your cat is Miso."}, []string{"What is my cat called?", "Your cat is Miso."}},
		{"string_input", `{"model":"gpt-4.1","input":"What is my cat called?"}`, "openai", fakeprovider.Reply{Text: "Miso."}, []string{"What is my cat called?", "Miso."}},
		{"declared_upstream", `{"model":"llama-3.1-8b","input":"What is my cat called?","stream":true}`, "vllm", fakeprovider.Reply{Text: "Miso."}, []string{"What is my cat called?", "Miso."}},
		{"tool_exchange", `{"model":"gpt-4.1","input":[{"role":"user","content":"Weather in Paris?"},` +
			`{"type":"function_call","call_id":"call_w1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},` +
			`{"type":"function_call_output","call_id":"call_w1","output":"sunny"}],"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`,
			"openai", fakeprovider.Reply{Text: "Sunny."}, []string{"Weather in Paris?", "Sunny."}},
		{"tool_call_reply_stream", with(responsesIn, `,"stream":true`), "openai", fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{{ID: "call_w2", Name: "get_weather", Arguments: `{"city":"Paris"}`}}}, []string{"What is my cat called?"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tp := newTestProxy(t)
			tp.openai.Script(c.reply)
			tp.vl.Script(c.reply)
			status, h, body := tp.post("/v1/responses", c.body, "Authorization: Bearer sk-proj-k")
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, body)
			}
			tp.settle(1)
			got := tp.received()[c.provider]
			if len(got) != 1 || got[0].Path != "/v1/responses" || got[0].Header.Get("Authorization") != "Bearer sk-proj-k" {
				t.Fatalf("provider %s got %+v", c.provider, got)
			}
			sent := string(got[0].Body)
			if strings.Contains(sent, "HARNESS COPY") || !strings.Contains(sent, "her cat is called Miso") {
				t.Fatalf("frame not in place of the input history: %s", sent)
			}
			golden(t, "responses/"+c.name+".request.json", append(got[0].Body, '\n'))
			if strings.Contains(c.body, `"stream":true`) {
				evs := events(t, body)
				if last := evs[len(evs)-1]; last.Event != "response.completed" || !isEventStream(h.Get("Content-Type")) {
					t.Fatalf("stream ends with %s", last.Event)
				}
			} else if !strings.Contains(body, `"object": "response"`) {
				t.Fatalf("body %s", body)
			}
			st := tp.mem.Stored()
			var texts []string
			for _, m := range st {
				texts = append(texts, m.Text)
				if m.Interrupted {
					t.Fatalf("stored flagged: %+v", st)
				}
			}
			if !reflect.DeepEqual(texts, c.wantStored) {
				t.Fatalf("stored %q, want %q", texts, c.wantStored)
			}
			if recs := tp.dir.Records(); len(recs) != 1 || recs[0].Dialect != "openai-responses" || recs[0].Provider != c.provider || recs[0].TokensOut == 0 {
				t.Fatalf("records %+v", recs)
			}
		})
	}
}

// TestResponsesNotTranslated: a claude-* model through /v1/responses is a
// 400 in the OpenAI dialect naming the routes that translate.
func TestResponsesNotTranslated(t *testing.T) {
	t.Parallel()
	tp := newTestProxy(t)
	status, _, body := tp.post("/v1/responses", `{"model":"claude-sonnet-4-5","input":"hi"}`, "X-Api-Key: sk-ant-k")
	var e struct {
		Error struct{ Message, Type string } `json:"error"`
	}
	if status != 400 || json.Unmarshal([]byte(body), &e) != nil || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, "/v1/messages") {
		t.Fatalf("%d %s", status, body)
	}
	if len(tp.received()) != 0 || len(tp.mem.Stored()) != 0 {
		t.Fatal("refused request reached a provider or was stored")
	}
}

// TestResponsesStateful: with previous_response_id the provider holds the
// history; the input goes as sent, no frame, and the turn is still captured.
func TestResponsesStateful(t *testing.T) {
	t.Parallel()
	tp := newTestProxy(t)
	tp.openai.Script(fakeprovider.Reply{Text: "Miso."})
	in := `{"model":"gpt-4.1","previous_response_id":"resp_1","input":[{"role":"user","content":"What is my cat called?"}]}`
	status, h, body := tp.post("/v1/responses", in, "Authorization: Bearer sk-proj-k")
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	tp.settle(1)
	var sent, want map[string]any
	_ = json.Unmarshal(tp.openai.Requests()[0].Body, &sent)
	_ = json.Unmarshal([]byte(in), &want)
	if !reflect.DeepEqual(sent, want) || h.Get(HeaderFrameItems) != "" {
		t.Fatalf("stateful request changed: %v (frame header %q)", sent, h.Get(HeaderFrameItems))
	}
	if st := tp.mem.Stored(); len(st) != 2 {
		t.Fatalf("stored %+v", st)
	}
}

// TestResponsesStreamFaults: a Responses stream that fails or stops short
// ends in an error event the SDKs raise, and the reply is stored flagged.
func TestResponsesStreamFaults(t *testing.T) {
	t.Parallel()
	for name, reply := range map[string]fakeprovider.Reply{
		"in-band error": {Text: "one two three", InBandErrorAfter: 1},
		"no completed":  {Text: "one two three", OmitStopReason: true},
		"cut":           {Text: "one two three", FailAfter: 1},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tp := newTestProxy(t)
			tp.openai.Script(reply)
			status, _, body := tp.post("/v1/responses", with(responsesIn, `,"stream":true`), "Authorization: Bearer sk-proj-k")
			evs := events(t, body)
			last := evs[len(evs)-1]
			var e struct {
				Type  string          `json:"type"`
				Error json.RawMessage `json:"error"`
			}
			if status != 200 || last.Event != "error" || json.Unmarshal(last.Data, &e) != nil || e.Type != "error" || strings.Contains(body, "response.completed") {
				t.Fatalf("stream %s", body)
			}
			if name != "in-band error" && len(e.Error) == 0 {
				t.Fatalf("proxy's error event lacks the error object the SDKs raise: %s", last.Data)
			}
			tp.settle(1)
			if st := tp.mem.Stored(); len(st) != 2 || !st[1].Interrupted || st[1].Text == "" {
				t.Fatalf("stored %+v", st)
			}
		})
	}
}

func TestParseResponsesInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body string
		live       int
		liveText   string
		system     string
		stateful   bool
		err        string
	}{
		{"string", `{"model":"m","input":"hello"}`, 0, "hello", "", false, ""},
		{"no input", `{"model":"m","prompt":{"id":"p"}}`, -1, "", "", false, ""},
		{"items", `{"model":"m","instructions":"I","input":[{"role":"system","content":"S"},{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"data:x"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"o"}]}`, 1, "a", "I\nS", false, ""},
		{"tool output last", `{"model":"m","input":[{"role":"user","content":"q"},{"type":"custom_tool_call_output","call_id":"c","output":"o"}]}`, 0, "q", "", false, ""},
		{"conversation", `{"model":"m","conversation":{"id":"conv_1"},"input":"x"}`, 0, "x", "", true, ""},
		{"previous", `{"model":"m","previous_response_id":"resp_1","input":"x"}`, 0, "x", "", true, ""},
		{"bad role", `{"model":"m","input":[{"role":"wizard","content":"x"}]}`, 0, "", "", false, "input[0]: role"},
		{"not items", `{"model":"m","input":42}`, 0, "", "", false, "input: must be"},
		{"bad instructions", `{"model":"m","instructions":[1],"input":"x"}`, 0, "", "", false, "instructions"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			in, err := parseInbound(dialect.OpenAIResponses, []byte(c.body))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if in.live != c.live || c.live >= 0 && in.messages[in.live].text != c.liveText || in.system != c.system || in.stateful != c.stateful {
				t.Fatalf("live %d system %q stateful %v", in.live, in.system, in.stateful)
			}
		})
	}
}
