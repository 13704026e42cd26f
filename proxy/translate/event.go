package translate

import (
	"github.com/perpetuity/perpetuity/proxy/sse"
	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
)

// doneData is the data of OpenAI's terminator event.
const doneData = "[DONE]"

// dataEvent formats an event the way the provider APIs do: an optional
// "event:" line, one "data:" line (JSON never contains a raw newline), and
// a blank line.
func dataEvent(name string, data []byte) sse.Event {
	raw := make([]byte, 0, len(name)+len(data)+16)
	if name != "" {
		raw = append(raw, "event: "...)
		raw = append(raw, name...)
		raw = append(raw, '\n')
	}
	raw = append(raw, "data: "...)
	raw = append(raw, data...)
	raw = append(raw, "\n\n"...)
	return sse.Event{Event: name, Data: data, Raw: raw}
}

// ChatDoneEvent is OpenAI's stream terminator, `data: [DONE]`.
func ChatDoneEvent() sse.Event { return dataEvent("", []byte(doneData)) }

func jsonEvent(name string, v any) (sse.Event, error) {
	data, err := jsonx.Marshal(v)
	if err != nil {
		return sse.Event{}, err
	}
	return dataEvent(name, data), nil
}
