// Package sse parses and writes Server-Sent Events as the LLM provider APIs
// use them. The parser is a stateful buffer: bytes go in as they arrive from
// the network, complete events come out, and each event keeps its exact raw
// bytes so a same-dialect relay can forward it verbatim.
package sse

// Event is one dispatched SSE event.
type Event struct {
	// Event is the "event:" field; empty when the stream sent none
	// (OpenAI chat completions sends none).
	Event string
	// Data is the "data:" lines joined with "\n", without the final newline.
	Data []byte
	// ID is the "id:" field, if any.
	ID string
	// Raw is the exact bytes of the event as received, including the blank
	// line that ended it, so it can be relayed byte for byte. Comment-only
	// blocks (keep-alives) that came before the event are included at its
	// start (see Parser). Data may share Raw's backing array.
	Raw []byte
}
