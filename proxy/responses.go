package proxy

import (
	"encoding/json"
	"strings"

	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
	"github.com/perpetuity/perpetuity/proxy/wire/openai"
)

// The OpenAI Responses API (POST /v1/responses) is relayed to
// OpenAI-compatible upstreams only, untranslated: its event stream has no
// faithful counterpart in the messages API, so a claude-* model asked
// through it is a 400 naming the routes that do translate.
//
// The history lives in "input" (a string, or message and tool items);
// "instructions" is the system prompt and stays as sent. The frame replaces
// the input items up to the live question (the last user message with
// text); system and developer messages at the head and the tool items after
// the live question stay native, so call ids still match.
//
// A stateful request (previous_response_id or conversation) sends no
// history: the provider holds it. There is nothing to replace, and writing
// the frame into the input would store it upstream turn after turn, so such
// a request goes through as sent (capture still happens). A conversation id
// names Perpetuity's conversation too.

// parseResponsesInput reads the Responses request's input, instructions and
// hints into in; with skim (a valid body), its items are walked where the
// walk can (skim.go).
func parseResponsesInput(in *inbound, skim bool) (*inbound, error) {
	in.listKey = "input"
	var sys []string
	if raw, ok := in.fields["instructions"]; ok && !jsonx.IsNull(raw) {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, errBadRequest("instructions: must be a string")
		}
		sys = append(sys, s)
	}
	if raw, ok := in.fields["user"]; ok {
		_ = json.Unmarshal(raw, &in.userHint)
	}
	if raw, ok := in.fields["prompt_cache_key"]; ok {
		_ = json.Unmarshal(raw, &in.cacheKey)
	}
	if raw, ok := in.fields["conversation"]; ok && !jsonx.IsNull(raw) {
		in.session = openai.ConversationID(raw)
		in.stateful = true
	}
	if raw, ok := in.fields["previous_response_id"]; ok && !jsonx.IsNull(raw) {
		in.stateful = true
		_ = json.Unmarshal(raw, &in.prevResponse)
	}
	raw, ok := in.fields["input"]
	switch {
	case !ok || jsonx.IsNull(raw):
		// A stored prompt or previous_response_id can stand in for input.
	case len(raw) > 0 && raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, errBadRequest("input: invalid string")
		}
		msg, _ := json.Marshal(map[string]string{"role": "user", "content": s})
		in.messages = []inMessage{{role: "user", text: s, raw: msg}}
	default:
		var walked bool
		if skim {
			in.messages, walked = skimResponsesItems(raw)
		}
		if !walked {
			var err error
			if in.messages, err = decodeResponsesItems(raw); err != nil {
				return nil, err
			}
		}
		for _, m := range in.messages {
			if m.role == "system" || m.role == "developer" {
				sys = append(sys, m.text)
			}
		}
	}
	in.system = strings.Join(sys, "\n")
	in.findLive()
	return in, nil
}

// decodeResponsesItems decodes a Responses request's array of input items.
func decodeResponsesItems(raw json.RawMessage) ([]inMessage, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errBadRequest("input: must be a string or an array of input items")
	}
	var out []inMessage
	for i, r := range items {
		m, err := parseResponsesItem(r)
		if err != nil {
			return nil, errBadRequest("input[%d]: %s", i, err.Error())
		}
		out = append(out, m)
	}
	return out, nil
}

// checkItemRole refuses a message item's role the Responses API lacks.
func checkItemRole(role string) error {
	switch role {
	case "user", "assistant", "system", "developer":
		return nil
	}
	return errString("role must be one of user, assistant, system, developer")
}

func parseResponsesItem(raw json.RawMessage) (inMessage, error) {
	var it openai.ResponsesInputItem
	if err := json.Unmarshal(raw, &it); err != nil {
		return inMessage{}, errString("must be an input item object")
	}
	out := inMessage{raw: raw}
	switch {
	case it.IsMessage():
		if err := checkItemRole(it.Role); err != nil {
			return out, err
		}
		out.role = it.Role
		text, nonText, err := contentText(it.Content)
		if err != nil {
			return out, err
		}
		out.text, out.nonText = text, nonText
	case it.IsToolOutput():
		out.role, out.toolOnly, out.nonText = "tool", true, true
	default:
		// Calls, reasoning, item references: the model's side of an
		// exchange, never a question.
		out.role, out.nonText = "assistant", true
	}
	return out, nil
}
