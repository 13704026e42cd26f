package translate

import (
	"errors"

	"github.com/perpetuity/perpetuity/proxy/sse"
)

// Stream translates one upstream SSE stream into the other dialect, one
// upstream event at a time, so every translated event can be flushed as soon
// as its upstream event arrives. Not safe for concurrent use.
type Stream interface {
	// Push translates one upstream event into zero or more events, in order.
	// An error means the upstream event was malformed: the caller should send
	// an error event (ChatErrorEvent / MessagesErrorEvent) and stop.
	Push(ev sse.Event) ([]sse.Event, error)
	// End is called when the upstream body ends. It returns the closing
	// events, or an error: ErrUnterminated (the caller sends an error event)
	// or ErrUpstreamFailed (the error event was already emitted by Push; the
	// caller just ends the response).
	End() ([]sse.Event, error)
}

var (
	// ErrUnterminated: the upstream stream ended without its terminator
	// (message_stop / data: [DONE]). The client must see an error, not a
	// clean end.
	ErrUnterminated = errors.New("upstream stream ended without its terminator")
	// ErrUpstreamFailed: the upstream sent an in-band error, which Push has
	// already translated into the client's dialect.
	ErrUpstreamFailed = errors.New("upstream stream reported an error")
)

// StreamOptions configures a translated stream.
type StreamOptions struct {
	// Model is the model name the client asked for; empty keeps the
	// upstream's.
	Model string
	// IncludeUsage emits OpenAI's final usage chunk (and "usage":null on
	// every other chunk), as stream_options.include_usage asks. Only used
	// toward OpenAI.
	IncludeUsage bool
}

// streamState is what both directions track about the upstream's progress.
type streamState int

const (
	stateOpen streamState = iota
	stateDone
	stateFailed
)

func (s streamState) end() error {
	switch s {
	case stateDone:
		return nil
	case stateFailed:
		return ErrUpstreamFailed
	}
	return ErrUnterminated
}
