package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/perpetuity/perpetuity/proxy/sse"
)

// Transcript is what a client saw of one event stream.
type Transcript struct {
	Events   int
	Deltas   int    // content deltas
	Text     string // the content deltas joined
	Stopped  bool   // a finish_reason / stop_reason arrived
	Terminal bool   // the dialect's terminator ([DONE] / message_stop) arrived
	Errors   int    // in-band error events
	// CleanAfterError is set when a stop or terminator came after an error
	// event: a client would take the reply for finished.
	CleanAfterError bool
	// End is how reading stopped: nil for a clean end of body, else the
	// read error (an aborted chunked body gives io.ErrUnexpectedEOF).
	End error
}

// CleanLooking reports a stream that a client would take for a complete
// reply: its terminator arrived and no error event did.
func (tr *Transcript) CleanLooking() bool { return tr.Terminal && tr.Errors == 0 }

// ReadStream reads an event stream of dialect d from r. After every event
// more is asked whether to go on; returning false stops reading there (the
// caller hangs up). more may be nil.
func ReadStream(d Dialect, r io.Reader, more func(*Transcript) bool) Transcript {
	var tr Transcript
	var text bytes.Buffer
	rd := sse.NewReader(r)
	for {
		ev, err := rd.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				tr.End = err
			}
			break
		}
		tr.Events++
		if d.Anthropic() {
			readAnthropic(&tr, &text, ev)
		} else {
			readOpenAI(&tr, &text, ev)
		}
		if more == nil {
			continue
		}
		tr.Text = text.String()
		if !more(&tr) {
			break
		}
	}
	tr.Text = text.String()
	return tr
}

func (tr *Transcript) sawStop() {
	tr.Stopped = true
	if tr.Errors > 0 {
		tr.CleanAfterError = true
	}
}

func (tr *Transcript) sawTerminal() {
	tr.Terminal = true
	if tr.Errors > 0 {
		tr.CleanAfterError = true
	}
}

func readOpenAI(tr *Transcript, text *bytes.Buffer, ev sse.Event) {
	if bytes.Equal(bytes.TrimSpace(ev.Data), []byte("[DONE]")) {
		tr.sawTerminal()
		return
	}
	var chunk struct {
		Error   json.RawMessage `json:"error"`
		Choices []struct {
			Delta struct {
				Content *string `json:"content"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
	}
	if json.Unmarshal(ev.Data, &chunk) != nil {
		return
	}
	if len(chunk.Error) > 0 && string(chunk.Error) != "null" {
		tr.Errors++
		return
	}
	for _, c := range chunk.Choices {
		if c.Delta.Content != nil && *c.Delta.Content != "" {
			tr.Deltas++
			text.WriteString(*c.Delta.Content)
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			tr.sawStop()
		}
	}
}

func readAnthropic(tr *Transcript, text *bytes.Buffer, ev sse.Event) {
	switch ev.Event {
	case "error":
		tr.Errors++
	case "message_stop":
		tr.sawTerminal()
	case "message_delta":
		var md struct {
			Delta struct {
				StopReason *string `json:"stop_reason"`
			} `json:"delta"`
		}
		if json.Unmarshal(ev.Data, &md) == nil && md.Delta.StopReason != nil && *md.Delta.StopReason != "" {
			tr.sawStop()
		}
	case "content_block_delta":
		var cd struct {
			Delta struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"delta"`
		}
		if json.Unmarshal(ev.Data, &cd) == nil && cd.Delta.Type == "text_delta" {
			tr.Deltas++
			text.WriteString(cd.Delta.Text)
		}
	}
}

// ErrorBody reports whether b is an error body of dialect d with a message.
func ErrorBody(d Dialect, b []byte) bool {
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) != nil || e.Error.Message == "" || e.Error.Type == "" {
		return false
	}
	return !d.Anthropic() || e.Type == "error"
}
