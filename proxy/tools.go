package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/dialect"
)

// Memory tools in the reply (DESIGN §7). The loop works in the provider's
// dialect, on the request as the provider gets it: the tool definitions and
// their instruction go into that body, the model's memory calls are taken
// out of its reply, run here, and sent back natively (the assistant's call
// message, then the results) after the frame and the harness's in-flight
// exchange, so ids match. A crossing adapter's translator sees one
// continuous reply, as the harness does.
//
// Behaviour:
//   - Rounds: at most Config.ToolRounds provider calls per request (default
//     3). On the last one the model must answer: when the harness has tools
//     of its own the memory tools are withdrawn from the list (its tools and
//     tool_choice stay as sent); otherwise tool_choice is set to none and the
//     definitions stay, because earlier rounds' tool blocks are in the
//     history. A memory call made anyway on the last round is dropped.
//   - A round that calls only memory tools is continued. Its text was
//     already forwarded; the next round's text follows after a blank line.
//   - A round that mixes memory and harness calls: the memory calls run, the
//     harness calls are answered "not run yet" in the continuation, and the
//     model, now with what memory said, makes them again (or not, if what
//     memory said changed its mind); they then reach the harness. No call
//     vanishes unanswered, and the harness never gets a call the model made
//     before reading the memory it asked for.
//   - A round that calls only harness tools goes to the harness untouched.
//     Streamed, a round's events from its first harness call on are held
//     until the round ends (only then is it known whether memory was
//     called too); text before that goes out as it comes.
//   - A round cut short (max tokens, content filter, ...) is never
//     continued: its memory calls are dropped.
//   - Tools are on unless X-Perpetuity-Tools: off or the upstream is
//     declared notools, with recall on and a frame built (a live question). Probe mode keeps them: they only read.
//     The Responses API never gets them (it is relayed untranslated, and its
//     stream has no single-message shape to stitch rounds into), nor a
//     request asking for several choices (n > 1).

// defaultToolRounds is the provider calls one request may take when the
// configuration says nothing.
const defaultToolRounds = 3

// notRunYet answers a harness call made in the same reply as memory calls.
const notRunYet = "Not run yet: this reply also asked memory, which is answered first. Call this tool again now if it is still needed."

// toolCall is one call in a provider reply.
type toolCall struct {
	id, name string
	args     string // JSON text
	memory   bool
}

// toolLoop is one turn's memory-tool loop, in the provider's dialect.
type toolLoop struct {
	dialect dialect.Dialect
	state   *memory.ToolState
	max     int
	round   int // the round being served, from 1
	// harnessTools: the harness sent tools of its own.
	harnessTools bool
	body         []byte // the current round's request
	calls        int    // memory calls run
}

func (p *Proxy) toolRounds() int {
	if p.cfg.ToolRounds == 0 {
		return defaultToolRounds
	}
	return p.cfg.ToolRounds
}

// toolsFor decides whether a turn offers the memory tools.
func (p *Proxy) toolsFor(t *turn) bool {
	in := t.in
	if !t.sw.tools || !t.sw.recall || in.live < 0 || in.stateful || p.toolRounds() < 2 || t.up.noTools {
		return false
	}
	if in.dialect == dialect.OpenAIResponses || t.up.dialect == dialect.OpenAIResponses {
		return false
	}
	if raw, ok := in.fields["n"]; ok {
		var n int
		if json.Unmarshal(raw, &n) == nil && n > 1 {
			return false
		}
	}
	return true
}

// offer starts the loop on the first round's request: the memory tools
// after the harness's, their instruction after its system prompt.
func (p *Proxy) offer(q memory.FrameQuery, f memory.Frame, d dialect.Dialect, body []byte) (*toolLoop, []byte, error) {
	o, err := parseObject(body)
	if err != nil {
		return nil, nil, fmt.Errorf("tools: request body: %w", err)
	}
	l := &toolLoop{dialect: d, state: memory.NewToolState(q, f), max: p.toolRounds(), round: 1}
	tools := o.array("tools")
	l.harnessTools = len(tools) > 0
	for _, s := range memory.Tools() {
		tools = append(tools, toolDefinition(d, s))
	}
	o.set("tools", tools)
	if d == dialect.AnthropicMessages {
		o.setRaw("system", withInstructions(o.get("system")))
	} else {
		msgs := o.array("messages")
		at := 0
		role := "system"
		for at < len(msgs) {
			var m struct {
				Role string `json:"role"`
			}
			if json.Unmarshal(msgs[at], &m) != nil || (m.Role != "system" && m.Role != "developer") {
				break
			}
			role = m.Role
			at++
		}
		ins, _ := json.Marshal(struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		}{role, memory.ToolInstructions})
		msgs = append(msgs[:at], append([]json.RawMessage{ins}, msgs[at:]...)...)
		o.set("messages", msgs)
	}
	l.body = o.bytes()
	return l, l.body, nil
}

// toolDefinition wraps a memory tool in the provider's dialect.
func toolDefinition(d dialect.Dialect, s memory.ToolSpec) json.RawMessage {
	var v any
	if d == dialect.AnthropicMessages {
		v = struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}{s.Name, s.Description, s.Parameters}
	} else {
		type fn struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		v = struct {
			Type     string `json:"type"`
			Function fn     `json:"function"`
		}{"function", fn{s.Name, s.Description, s.Parameters}}
	}
	b, _ := json.Marshal(v)
	return b
}

// withInstructions appends the tool instruction to Anthropic's system
// prompt: after a string, or as a block of its own after the harness's
// blocks, so their cache breakpoints keep their prefix.
func withInstructions(sys json.RawMessage) json.RawMessage {
	if len(sys) == 0 || isNull(sys) {
		b, _ := json.Marshal(memory.ToolInstructions)
		return b
	}
	var s string
	if json.Unmarshal(sys, &s) == nil {
		if s != "" {
			s += "\n\n"
		}
		b, _ := json.Marshal(s + memory.ToolInstructions)
		return b
	}
	var blocks []json.RawMessage
	if json.Unmarshal(sys, &blocks) != nil {
		return sys
	}
	blk, _ := json.Marshal(map[string]string{"type": "text", "text": memory.ToolInstructions})
	b, _ := json.Marshal(append(blocks, blk))
	return b
}

// continues reports whether a round's reply is followed by another round:
// it called memory, was not cut short, and rounds remain.
func (l *toolLoop) continues(calls []toolCall, stop string) bool {
	if l == nil || l.round >= l.max || truncated(stop) {
		return false
	}
	for _, c := range calls {
		if c.memory {
			return true
		}
	}
	return false
}

// truncated names the stop reasons of a reply that was cut short.
func truncated(stop string) bool {
	switch stop {
	case "length", "max_tokens", "content_filter", "refusal", "pause_turn", "model_context_window_exceeded":
		return true
	}
	return false
}

// runTools answers a round's calls: memory calls run against the turn's
// tool state, harness calls get notRunYet.
func (p *Proxy) runTools(ctx context.Context, t *turn, calls []toolCall) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		if !c.memory {
			out[i] = notRunYet
			continue
		}
		start := time.Now()
		res, err := p.mem.RunTool(ctx, t.loop.state, c.name, json.RawMessage(c.args))
		if err != nil {
			if ctx.Err() == nil { // a client gone is no memory failure
				p.log.Warn("memory tool failed", "request_id", t.rid, "tool", c.name, "err", err)
			}
			res = "error: memory could not be read just now; answer with what you have"
		}
		t.loop.calls++
		p.log.Debug("memory tool", "request_id", t.rid, "tool", c.name, "round", t.loop.round,
			"result_bytes", len(res), "ms", time.Since(start).Milliseconds())
		out[i] = res
	}
	return out
}

// next builds the following round's request: the round's assistant
// message and the results appended, natively, to the current request; on
// the last round the model must answer.
func (l *toolLoop) next(assistant json.RawMessage, calls []toolCall, results []string) ([]byte, error) {
	o, err := parseObject(l.body)
	if err != nil {
		return nil, err
	}
	msgs := append(o.array("messages"), assistant)
	if l.dialect == dialect.AnthropicMessages {
		var blocks []any
		for i, c := range calls {
			blocks = append(blocks, map[string]string{"type": "tool_result", "tool_use_id": c.id, "content": results[i]})
		}
		b, _ := json.Marshal(map[string]any{"role": "user", "content": blocks})
		msgs = append(msgs, b)
	} else {
		for i, c := range calls {
			b, _ := json.Marshal(map[string]string{"role": "tool", "tool_call_id": c.id, "content": results[i]})
			msgs = append(msgs, b)
		}
	}
	o.set("messages", msgs)
	l.round++
	l.body = o.bytes()
	if l.round < l.max {
		return l.body, nil
	}
	// The last round's edits stay out of l.body: there is no round after.
	if l.harnessTools {
		var keep []json.RawMessage
		for _, raw := range o.array("tools") {
			if !memory.IsTool(toolName(raw)) {
				keep = append(keep, raw)
			}
		}
		o.set("tools", keep)
	} else if l.dialect == dialect.AnthropicMessages {
		o.setRaw("tool_choice", json.RawMessage(`{"type":"none"}`))
	} else {
		o.setRaw("tool_choice", json.RawMessage(`"none"`))
	}
	return o.bytes(), nil
}

// toolName reads a tool definition's name in either dialect.
func toolName(raw json.RawMessage) string {
	var t struct {
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	_ = json.Unmarshal(raw, &t)
	if t.Name != "" {
		return t.Name
	}
	return t.Function.Name
}

// chatAssistant is the OpenAI assistant message of a round with tool calls.
func chatAssistant(text string, calls []toolCall) json.RawMessage {
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	m := struct {
		Role      string  `json:"role"`
		Content   *string `json:"content"`
		ToolCalls []call  `json:"tool_calls"`
	}{Role: "assistant"}
	if text != "" {
		m.Content = &text
	}
	for _, c := range calls {
		m.ToolCalls = append(m.ToolCalls, call{c.id, "function", fn{c.name, c.args}})
	}
	b, _ := json.Marshal(m)
	return b
}

// anthropicAssistant is the Anthropic assistant message of a round, every
// block as the model sent it (thinking blocks must go back with tool use).
func anthropicAssistant(blocks []json.RawMessage) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"role": "assistant", "content": blocks})
	return b
}

// needsBreak says a later round's text goes after a blank line: the text
// so far does not end in whitespace.
func needsBreak(sofar string) bool {
	if sofar == "" {
		return false
	}
	switch sofar[len(sofar)-1] {
	case ' ', '\n', '\t', '\r':
		return false
	}
	return true
}

// roundBreak is what goes between two rounds' texts.
const roundBreak = "\n\n"

// callID gives a call without an id (some OpenAI-compatible servers) one,
// so its result can name it.
func callID(id string, n int) string {
	if id != "" {
		return id
	}
	return fmt.Sprintf("call_memory_%d", n)
}
