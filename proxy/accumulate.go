package proxy

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/perpetuity/perpetuity/proxy/dialect"
	"github.com/perpetuity/perpetuity/proxy/sse"
	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
	"github.com/perpetuity/perpetuity/proxy/wire/openai"
)

// accumulator follows a stream in the dialect the provider speaks (not the
// client's: a translated stream is captured from what the provider said):
// the reply text, the usage, whether the terminator arrived and whether the
// provider sent an in-band error.
type accumulator struct {
	dialect dialect.Dialect
	text    strings.Builder
	usage   usage
	done    bool // the terminator arrived after a stop
	ended   bool // the terminator arrived (with or without a stop)
	failed  bool
	stopped bool // a stop/finish reason was seen
	// response is a Responses stream's response id (response.created
	// carries it first).
	response string
}

func newAccumulator(d dialect.Dialect) *accumulator { return &accumulator{dialect: d} }

func (a *accumulator) reply(interrupted bool) reply {
	return reply{text: a.text.String(), interrupted: interrupted, usage: a.usage, response: a.response}
}

// usage is the provider's token accounting of one reply.
type usage struct {
	in, out int
}

// wireUsage covers every dialect's usage object.
type wireUsage struct {
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

func (w *wireUsage) merge(u *usage) {
	if w == nil {
		return
	}
	if n := w.InputTokens + w.PromptTokens; n > 0 {
		u.in = n
	}
	if n := w.OutputTokens + w.CompletionTokens; n > 0 {
		u.out = n
	}
}

func readUsage(body []byte) usage {
	var r struct {
		Usage *wireUsage `json:"usage"`
	}
	var u usage
	if json.Unmarshal(body, &r) == nil {
		r.Usage.merge(&u)
	}
	return u
}

func (a *accumulator) add(ev sse.Event) {
	switch a.dialect {
	case dialect.AnthropicMessages:
		a.addAnthropic(ev)
	case dialect.OpenAIResponses:
		a.addResponses(ev)
	default:
		a.addChat(ev)
	}
}

func (a *accumulator) addAnthropic(ev sse.Event) {
	switch ev.Event {
	case "content_block_delta":
		var d anthropicDelta
		if decodeChunk(ev.Data, &d, walkAnthropicDelta) && d.Delta.Type == "text_delta" {
			a.text.WriteString(d.Delta.Text)
		}
	case "message_start":
		var m struct {
			Message struct {
				Usage *wireUsage `json:"usage"`
			} `json:"message"`
		}
		if json.Unmarshal(ev.Data, &m) == nil {
			m.Message.Usage.merge(&a.usage)
		}
	case "message_delta":
		a.stopped = true
		var m struct {
			Usage *wireUsage `json:"usage"`
		}
		if json.Unmarshal(ev.Data, &m) == nil {
			m.Usage.merge(&a.usage)
		}
	case "message_stop":
		a.ended = true
		a.done = a.stopped
	case "error":
		a.failed = true
	}
}

func (a *accumulator) addChat(ev sse.Event) {
	data := bytes.TrimSpace(ev.Data)
	if bytes.Equal(data, []byte("[DONE]")) {
		a.ended = true
		a.done = a.stopped
		return
	}
	var ch chatChunk
	if !decodeChunk(data, &ch, walkChat) {
		return
	}
	if len(ch.Error) > 0 && !jsonx.IsNull(ch.Error) {
		a.failed = true
		return
	}
	ch.Usage.merge(&a.usage)
	for _, c := range ch.Choices {
		a.text.WriteString(c.Delta.Content)
		if c.FinishReason != nil && *c.FinishReason != "" {
			a.stopped = true
		}
	}
}

// addResponses follows the Responses API's events. response.completed ends
// a reply; response.incomplete ends one cut short by a limit the caller
// set (max_output_tokens), which is still a proper end; response.failed and
// error events are failures.
func (a *accumulator) addResponses(ev sse.Event) {
	var e openai.ResponsesStreamEvent
	if !decodeChunk(bytes.TrimSpace(ev.Data), &e, walkResponses) {
		return
	}
	if e.Type == "" {
		e.Type = ev.Event
	}
	if e.Response != nil && e.Response.ID != "" {
		a.response = e.Response.ID
	}
	switch e.Type {
	case openai.EventOutputTextDelta:
		a.text.WriteString(e.Delta)
	case openai.EventResponseCompleted, openai.EventResponseIncomplete:
		a.ended, a.stopped, a.done = true, true, true
		if e.Response != nil {
			a.mergeResponsesUsage(e.Response.Usage)
		}
	case openai.EventResponseFailed, openai.EventError:
		a.failed = true
	}
}

func (a *accumulator) mergeResponsesUsage(u *openai.ResponsesUsage) {
	if u != nil {
		(&wireUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}).merge(&a.usage)
	}
}

// replyID is a non-streamed Responses reply's id; "" in other dialects.
func replyID(d dialect.Dialect, body []byte) string {
	if d != dialect.OpenAIResponses {
		return ""
	}
	var r struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(body, &r)
	return r.ID
}

// replyText reads the assistant's text out of a non-streamed reply in the
// provider's dialect.
func replyText(d dialect.Dialect, body []byte) string {
	switch d {
	case dialect.AnthropicMessages:
		var m struct {
			Content []contentPart `json:"content"`
		}
		if json.Unmarshal(body, &m) != nil {
			return ""
		}
		var b strings.Builder
		for _, p := range m.Content {
			if p.Type == "text" {
				b.WriteString(p.Text)
			}
		}
		return b.String()
	case dialect.OpenAIResponses:
		var r openai.ResponsesResponse
		if json.Unmarshal(body, &r) != nil {
			return ""
		}
		return r.OutputText()
	default:
		var r struct {
			Choices []struct {
				Message struct {
					Content *string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		if json.Unmarshal(body, &r) != nil || len(r.Choices) == 0 || r.Choices[0].Message.Content == nil {
			return ""
		}
		return *r.Choices[0].Message.Content
	}
}
