package anthropic

import (
	"encoding/json"

	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
)

// Stream event types (the SSE "event:" name equals the data's "type").
const (
	EventMessageStart      = "message_start"
	EventContentBlockStart = "content_block_start"
	EventContentBlockDelta = "content_block_delta"
	EventContentBlockStop  = "content_block_stop"
	EventMessageDelta      = "message_delta"
	EventMessageStop       = "message_stop"
	EventPing              = "ping"
	EventError             = "error"
)

// Delta types of content_block_delta.
const (
	DeltaText      = "text_delta"
	DeltaInputJSON = "input_json_delta"
	DeltaThinking  = "thinking_delta"
	DeltaSignature = "signature_delta"
	DeltaCitations = "citations_delta"
)

// StreamEvent is the data of any stream event: a union over the event types.
type StreamEvent struct {
	Type string `json:"type"`
	// message_start
	Message *Response `json:"message,omitempty"`
	// content_block_start, content_block_delta, content_block_stop
	Index        int           `json:"index"`
	ContentBlock *ContentBlock `json:"content_block,omitempty"`
	// content_block_delta, message_delta
	Delta *EventDelta `json:"delta,omitempty"`
	// message_delta: cumulative totals. Older API versions send only
	// output_tokens, so absent counts decode as 0 and mean "unchanged".
	Usage *Usage `json:"usage,omitempty"`
	// error
	Error *ErrorDetail `json:"error,omitempty"`
}

// MarshalJSON implements json.Marshaler with the keys each event type has,
// in the API's order.
func (e StreamEvent) MarshalJSON() ([]byte, error) {
	o := jsonx.Object{}
	o.Set("type", e.Type)
	switch e.Type {
	case EventMessageStart:
		o.Set("message", e.Message)
	case EventContentBlockStart:
		o.Set("index", e.Index)
		o.Set("content_block", e.ContentBlock)
	case EventContentBlockDelta:
		o.Set("index", e.Index)
		o.Set("delta", e.Delta)
	case EventContentBlockStop:
		o.Set("index", e.Index)
	case EventMessageDelta:
		d := e.Delta
		if d == nil {
			d = &EventDelta{}
		}
		o.Set("delta", messageDelta{StopReason: d.StopReason, StopSequence: d.StopSequence})
		o.Set("usage", e.Usage)
	case EventError:
		o.Set("error", e.Error)
	}
	return o.Bytes()
}

type messageDelta struct {
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

// EventDelta is the delta of content_block_delta (Type set) or of
// message_delta (StopReason/StopSequence).
type EventDelta struct {
	Type        string          `json:"type,omitempty"`
	Text        string          `json:"text,omitempty"`
	PartialJSON string          `json:"partial_json,omitempty"`
	Thinking    string          `json:"thinking,omitempty"`
	Signature   string          `json:"signature,omitempty"`
	Citation    json.RawMessage `json:"citation,omitempty"`

	StopReason   *string `json:"stop_reason,omitempty"`
	StopSequence *string `json:"stop_sequence,omitempty"`
}

// MarshalJSON implements json.Marshaler: a block delta carries its type's
// payload key even when empty (the API opens every tool input with
// {"type":"input_json_delta","partial_json":""}).
func (d EventDelta) MarshalJSON() ([]byte, error) {
	if d.Type == "" {
		return jsonx.Marshal(messageDelta{StopReason: d.StopReason, StopSequence: d.StopSequence})
	}
	o := jsonx.Object{}
	o.Set("type", d.Type)
	switch d.Type {
	case DeltaText:
		o.Set("text", d.Text)
	case DeltaInputJSON:
		o.Set("partial_json", d.PartialJSON)
	case DeltaThinking:
		o.Set("thinking", d.Thinking)
	case DeltaSignature:
		o.Set("signature", d.Signature)
	case DeltaCitations:
		o.SetRaw("citation", d.Citation)
	}
	return o.Bytes()
}

// ParseStreamEvent decodes the data of a stream event.
func ParseStreamEvent(data []byte) (StreamEvent, error) {
	var e StreamEvent
	err := json.Unmarshal(data, &e)
	return e, err
}
