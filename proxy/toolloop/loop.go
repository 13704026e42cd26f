package toolloop

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/dialect"
	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
)

// NotRunYet answers a harness call made in the same reply as memory calls.
const NotRunYet = "Not run yet: this reply also asked memory, which is answered first. Call this tool again now if it is still needed."

// Tools runs the memory tools; the pipeline's memory engine is one.
type Tools interface {
	// RunTool runs one memory tool call of the turn whose frame st was
	// started from; bad arguments come back as result text.
	RunTool(ctx context.Context, st *memory.ToolState, name string, args json.RawMessage) (string, error)
}

// Options are one turn's loop.
type Options struct {
	Dialect dialect.Dialect // the provider's
	Rounds  int             // provider calls at most, the last of which must answer
	State   *memory.ToolState
	Tools   Tools
	Log     *slog.Logger
	// RequestID names the request in the log.
	RequestID string
}

// Loop is one turn's memory-tool loop, in the provider's dialect.
type Loop struct {
	proto protocol
	state *memory.ToolState
	tools Tools
	log   *slog.Logger
	rid   string
	max   int
	round int // the round being served, from 1
	// harnessTools: the harness sent tools of its own.
	harnessTools bool
	body         []byte // the current round's request
	// calls are the memory calls run, for the request inspector.
	calls []Call
}

// Call is one memory tool call the loop ran and what it answered.
type Call struct {
	Round  int
	Name   string
	Args   string // the call's JSON arguments, as the model sent them
	Result string
	Millis float64
	Failed bool
}

// Calls are the memory tool calls run so far, in order.
func (l *Loop) Calls() []Call {
	if l == nil {
		return nil
	}
	return l.calls
}

// call is one tool call in a provider reply.
type call struct {
	id, name string
	args     string // JSON text
	memory   bool
}

// Round is one provider reply as the loop reads it: its tool calls, its
// stop reason, and the assistant message that goes back to the model if
// the loop continues.
type Round struct {
	calls     []call
	stop      string
	assistant json.RawMessage
}

// CalledMemory reports a round that called a memory tool.
func (r Round) CalledMemory() bool { return hasMemory(r.calls) }

// Offer starts the loop on the first round's request: the memory tools
// after the harness's, their instruction after its system prompt. It
// returns the request to send. body is the proxy's own and valid JSON.
func Offer(opt Options, body []byte) (*Loop, []byte, error) {
	proto, err := protocolFor(opt.Dialect)
	if err != nil {
		return nil, nil, err
	}
	// The body is the proxy's own (a frame rendered into what parsed as
	// valid JSON, or a translation), so it is not validated again.
	o, err := jsonx.ParseValidObject(body)
	if err != nil {
		return nil, nil, fmt.Errorf("tools: request body: %w", err)
	}
	l := &Loop{proto: proto, state: opt.State, tools: opt.Tools, log: opt.Log, rid: opt.RequestID, max: opt.Rounds, round: 1}
	tools := o.Array("tools")
	l.harnessTools = len(tools) > 0
	for _, s := range memory.Tools() {
		tools = append(tools, proto.definition(s))
	}
	o.Set("tools", tools)
	proto.instruct(o)
	l.body = o.JSON()
	return l, l.body, nil
}

// Shown is what the memory tools showed the model (item ids).
func (l *Loop) Shown() []int64 {
	if l.state == nil {
		return nil
	}
	var out []int64
	for id := range l.state.Shown {
		out = append(out, id)
	}
	return out
}

// Read reads a non-streamed reply; an error means a reply the loop cannot
// read, which goes to the harness as it came.
func (l *Loop) Read(body []byte) (Round, error) { return l.proto.read(body) }

// Continues reports whether a round's reply is followed by another round:
// it called memory, was not cut short, and rounds remain.
func (l *Loop) Continues(r Round) bool { return l.continues(r.calls, r.stop) }

func (l *Loop) continues(calls []call, stop string) bool {
	if l == nil || l.round >= l.max || truncated(stop) {
		return false
	}
	return hasMemory(calls)
}

// Merge makes one reply of the rounds' non-streamed replies: every round's
// text (a blank line between rounds), the last round's harness tool calls,
// the last round's stop reason (an answer, when only memory calls were
// dropped), and the usage of all rounds added up.
func (l *Loop) Merge(bodies [][]byte) ([]byte, error) { return l.proto.merge(bodies) }

// Stitcher makes one stream of the rounds' streams.
func (l *Loop) Stitcher() Stitcher { return l.proto.stitcher(l) }

// Next runs a round's calls and builds the following round's request.
func (l *Loop) Next(ctx context.Context, r Round) ([]byte, error) {
	return l.next(r.assistant, r.calls, l.run(ctx, r.calls))
}

// truncated names the stop reasons of a reply that was cut short.
func truncated(stop string) bool {
	switch stop {
	case "length", "max_tokens", "content_filter", "refusal", "pause_turn", "model_context_window_exceeded":
		return true
	}
	return false
}

// run answers a round's calls: memory calls run against the turn's tool
// state, harness calls get NotRunYet.
func (l *Loop) run(ctx context.Context, calls []call) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		if !c.memory {
			out[i] = NotRunYet
			continue
		}
		start := time.Now()
		res, err := l.tools.RunTool(ctx, l.state, c.name, json.RawMessage(c.args))
		failed := err != nil
		if err != nil {
			if ctx.Err() == nil { // a client gone is no memory failure
				l.log.Warn("memory tool failed", "request_id", l.rid, "tool", c.name, "err", err)
			}
			res = "error: memory could not be read just now; answer with what you have"
		}
		l.log.Debug("memory tool", "request_id", l.rid, "tool", c.name, "round", l.round,
			"result_bytes", len(res), "ms", time.Since(start).Milliseconds())
		l.calls = append(l.calls, Call{Round: l.round, Name: c.name, Args: c.args, Result: res,
			Millis: float64(time.Since(start).Microseconds()) / 1000, Failed: failed})
		out[i] = res
	}
	return out
}

// next builds the following round's request: the round's assistant
// message and the results appended, natively, to the current request; on
// the last round the model must answer.
func (l *Loop) next(assistant json.RawMessage, calls []call, results []string) ([]byte, error) {
	o, err := jsonx.ParseObject(l.body)
	if err != nil {
		return nil, err
	}
	msgs := append(o.Array("messages"), assistant)
	o.Set("messages", append(msgs, l.proto.results(calls, results)...))
	l.round++
	l.body = o.JSON()
	if l.round < l.max {
		return l.body, nil
	}
	// The last round's edits stay out of l.body: there is no round after.
	if l.harnessTools {
		var keep []json.RawMessage
		for _, raw := range o.Array("tools") {
			if !memory.IsTool(toolName(raw)) {
				keep = append(keep, raw)
			}
		}
		o.Set("tools", keep)
	} else {
		o.SetRaw("tool_choice", l.proto.noneChoice())
	}
	return o.JSON(), nil
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

func hasMemory(calls []call) bool {
	for _, c := range calls {
		if c.memory {
			return true
		}
	}
	return false
}

func hasHarness(calls []call) bool {
	for _, c := range calls {
		if !c.memory {
			return true
		}
	}
	return false
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
