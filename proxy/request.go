package proxy

import (
	"encoding/json"
	"strings"

	"github.com/perpetuity/perpetuity/proxy/dialect"
	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
)

// inbound is the dialect-neutral view of a chat request: just what the
// pipeline reads. Everything else stays in fields, untouched, so unknown
// parameters reach the provider as sent.
type inbound struct {
	dialect  dialect.Dialect
	body     []byte // as received
	fields   map[string]json.RawMessage
	model    string
	stream   bool
	messages []inMessage
	// live is the index of the live question: the last user message that
	// carries text of its own (not only tool results). -1 when there is none.
	live     int
	system   string // system prompt text, for deriving the conversation
	userHint string // OpenAI "user" / Anthropic metadata.user_id
	// listKey is the field holding messages: "messages", or "input" for
	// the Responses API.
	listKey string
	// includeUsage: an OpenAI chat stream asked for the usage chunk.
	includeUsage bool
	// session is a conversation id the harness itself sent (Responses
	// "conversation"), which names the conversation when present.
	session string
	// cacheKey is the Responses prompt_cache_key, which Codex CLI sets to
	// its thread id (session.go).
	cacheKey string
	// prevResponse is the Responses previous_response_id: the provider's
	// id of the reply this request continues (identity.go).
	prevResponse string
	// posBase is where this request's messages stand in their
	// conversation: past the turns of the responses it continues
	// (chains.go); 0 for a request that sends its whole history.
	posBase int
	// question is the live message's text as memory stores it, without
	// a harness's scaffolding parts (liveScaffold: it had some), which
	// still go to the provider with it (question.go).
	question     string
	liveScaffold bool
	// liveBreakpoint is the cache_control of the live message's last text
	// part of its own (Anthropic): the frame's rendering of the question
	// carries it, or the provider's prompt cache would end before the
	// question (liveParts).
	liveBreakpoint json.RawMessage
	// stateful: the provider holds the history (Responses
	// previous_response_id or conversation), so there is none to replace.
	stateful bool
}

type inMessage struct {
	role string
	text string
	// nonText is set when the message carries parts other than text (images,
	// tool calls or results), so it cannot be re-rendered from text alone.
	nonText bool
	// toolOnly is set for tool results (OpenAI role "tool", Anthropic user
	// messages made only of tool_result blocks): in-flight exchange, not a turn.
	toolOnly bool
	raw      json.RawMessage
}

type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// parseInbound decodes a chat request body of dialect d. Errors are
// client errors, written in the client's dialect.
func parseInbound(d dialect.Dialect, body []byte) (*inbound, error) {
	return parseInboundWith(d, body, true)
}

// parseInboundWith is parseInbound. With skim, a valid body's fields and
// messages are read by walking it (skim.go) and only what the walk is
// not sure of is decoded; without, everything is decoded (the tests hold
// the two alike).
func parseInboundWith(d dialect.Dialect, body []byte, skim bool) (*inbound, error) {
	in := &inbound{dialect: d, body: body, live: -1, listKey: "messages"}
	skim = skim && json.Valid(body)
	if !skim || !skimFields(body, &in.fields) {
		in.fields = nil
		if err := json.Unmarshal(body, &in.fields); err != nil || in.fields == nil {
			return nil, errBadRequest("request body is not a JSON object: %s", jsonErrorText(err))
		}
	}
	if raw, ok := in.fields["model"]; ok {
		if err := json.Unmarshal(raw, &in.model); err != nil {
			return nil, errBadRequest("model: must be a string")
		}
	}
	if in.model == "" {
		return nil, errBadRequest("model: is required")
	}
	if raw, ok := in.fields["stream"]; ok && !jsonx.IsNull(raw) {
		if err := json.Unmarshal(raw, &in.stream); err != nil {
			return nil, errBadRequest("stream: must be a boolean")
		}
	}
	if d == dialect.OpenAIResponses {
		return parseResponsesInput(in, skim)
	}
	if raw, ok := in.fields["stream_options"]; ok && d == dialect.OpenAIChat {
		var so struct {
			IncludeUsage bool `json:"include_usage"`
		}
		_ = json.Unmarshal(raw, &so)
		in.includeUsage = so.IncludeUsage
	}
	rawMsgs, ok := in.fields["messages"]
	if !ok {
		return nil, errBadRequest("messages: is required")
	}
	if skim {
		in.messages, skim = skimMessages(d, rawMsgs)
	}
	if !skim {
		var err error
		if in.messages, err = decodeMessages(d, rawMsgs); err != nil {
			return nil, err
		}
	}
	var sys []string
	for _, m := range in.messages {
		if m.role == "system" || m.role == "developer" {
			sys = append(sys, m.text)
		}
	}
	if d == dialect.AnthropicMessages {
		if raw, ok := in.fields["system"]; ok && !jsonx.IsNull(raw) {
			// A coding agent's system prompt runs to tens of kB.
			var t string
			walked := false
			if skim {
				t, _, _, walked = skimContent(raw)
			}
			if !walked {
				var err error
				if t, _, err = contentText(raw); err != nil {
					return nil, errBadRequest("system: must be a string or an array of text blocks")
				}
			}
			sys = append(sys, t)
		}
		if raw, ok := in.fields["metadata"]; ok {
			var md struct {
				UserID json.RawMessage `json:"user_id"`
			}
			if json.Unmarshal(raw, &md) == nil && len(md.UserID) > 0 {
				var s string
				if json.Unmarshal(md.UserID, &s) == nil {
					in.userHint = s
				}
			}
		}
	} else if raw, ok := in.fields["user"]; ok {
		_ = json.Unmarshal(raw, &in.userHint)
	}
	in.system = strings.Join(sys, "\n")
	in.findLive()
	return in, nil
}

// decodeMessages decodes a request's messages field.
func decodeMessages(d dialect.Dialect, rawMsgs json.RawMessage) ([]inMessage, error) {
	var msgs []json.RawMessage
	if err := json.Unmarshal(rawMsgs, &msgs); err != nil {
		return nil, errBadRequest("messages: must be an array of message objects")
	}
	if len(msgs) == 0 {
		return nil, errBadRequest("messages: must not be empty")
	}
	out := make([]inMessage, 0, len(msgs))
	for i, raw := range msgs {
		m, err := parseMessage(d, raw)
		if err != nil {
			return nil, errBadRequest("messages[%d]: %s", i, err.Error())
		}
		out = append(out, m)
	}
	return out, nil
}

// historyless says the request sends no turn before its live question:
// a client that sends only its newest message (naming its conversation),
// a Responses request on a conversation the provider stores, or any
// client's first request. Its live question's index says nothing of
// where it stands, so memory places it after the conversation's newest
// message (store.Capture's Appended). A request continuing a response this
// process relayed has its place already (posBase).
func (in *inbound) historyless() bool {
	if in.live < 0 || in.posBase != 0 {
		return false
	}
	for _, m := range in.messages[:in.live] {
		if m.role != "system" && m.role != "developer" {
			return false
		}
	}
	return true
}

// findLive marks the live question: the last user message with text of
// its own that is not part of a tool exchange. A user message with no
// text after it (a screenshot a harness sends after a tool's result, the
// tool role holding text only) continues the exchange: taken for the
// question, it dropped the exchange before it and asked memory nothing.
// With no text anywhere, the last user message is the question.
func (in *inbound) findLive() {
	in.pickLive()
	if in.live >= 0 {
		q := questionOf(in.messages[in.live], in.dialect == dialect.AnthropicMessages)
		in.question, in.liveScaffold, in.liveBreakpoint = q.text, q.scaffold, q.breakpoint
	}
}

func (in *inbound) pickLive() {
	in.live = -1
	for i := len(in.messages) - 1; i >= 0; i-- {
		m := in.messages[i]
		if m.role != "user" || m.toolOnly {
			continue
		}
		if strings.TrimSpace(m.text) != "" {
			in.live = i
			return
		}
		if in.live < 0 {
			in.live = i
		}
	}
}

// checkRole refuses a role the dialect does not have.
func checkRole(d dialect.Dialect, role string) error {
	switch d {
	case dialect.AnthropicMessages:
		if role != "user" && role != "assistant" {
			return errString("role must be \"user\" or \"assistant\"")
		}
	default:
		switch role {
		case "system", "developer", "user", "assistant", "tool", "function":
		default:
			return errString("role must be one of system, developer, user, assistant, tool")
		}
	}
	return nil
}

func parseMessage(d dialect.Dialect, raw json.RawMessage) (inMessage, error) {
	var m struct {
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		ToolCalls json.RawMessage `json:"tool_calls"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return inMessage{}, errString("must be an object with role and content")
	}
	out := inMessage{role: m.Role, raw: raw}
	if err := checkRole(d, m.Role); err != nil {
		return out, err
	}
	if m.Role == "tool" || m.Role == "function" {
		out.toolOnly, out.nonText = true, true
		return out, nil
	}
	text, nonText, err := contentText(m.Content)
	if err != nil {
		return out, err
	}
	out.text, out.nonText = text, nonText || (len(m.ToolCalls) > 0 && !jsonx.IsNull(m.ToolCalls))
	// An Anthropic user message carrying tool results continues the tool
	// exchange, even with text beside the results (harnesses add reminders
	// there): it stays native after the live question, with the assistant
	// tool_use it answers, so the ids still match.
	if d == dialect.AnthropicMessages && m.Role == "user" && nonText && hasToolResult(m.Content) {
		out.toolOnly = true
	}
	return out, nil
}

// contentText joins the text of a content field (a string or an array of
// parts) and reports whether other kinds of parts were present.
func contentText(raw json.RawMessage) (text string, nonText bool, err error) {
	if len(raw) == 0 || jsonx.IsNull(raw) {
		return "", false, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", false, errString("content: invalid string")
		}
		return s, false, nil
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", false, errString("content: must be a string or an array of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		nonText = p.join(&b) || nonText
	}
	return b.String(), nonText, nil
}

// join adds the part's text to b (on a line of its own) and reports
// whether it is a part of another kind.
func (p contentPart) join(b *strings.Builder) (nonText bool) {
	if !isTextPart(p.Type) {
		return true
	}
	if b.Len() > 0 {
		b.WriteString("\n")
	}
	b.WriteString(p.Text)
	return false
}

func hasToolResult(raw json.RawMessage) bool {
	var parts []contentPart
	if json.Unmarshal(raw, &parts) != nil {
		return false
	}
	for _, p := range parts {
		if p.Type == "tool_result" {
			return true
		}
	}
	return false
}

type errString string

func (e errString) Error() string { return string(e) }

func jsonErrorText(err error) string {
	if err == nil {
		return "got null"
	}
	return err.Error()
}
