package fakeprovider

import (
	"encoding/json"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// maxTextChunks caps the default one-delta-per-word split.
const maxTextChunks = 64

// Reply scripts one answer. The zero Reply answers with a text derived from
// the request.
type Reply struct {
	// Text is the assistant text. Empty with no ToolCalls means "ok: "
	// followed by the first 60 characters of the request's last user text.
	Text string
	// ToolCalls are emitted after the text. OpenAI finishes with
	// "tool_calls", Anthropic stops with "tool_use".
	ToolCalls []ToolCall
	// Chunks is how many text deltas Text is streamed in; 0 means one per
	// word (leading whitespace attached), at most 64.
	Chunks int
	// ChunkDelay paces a stream: it is waited before every event after the
	// first.
	ChunkDelay time.Duration
	// FirstByteDelay is waited before the response headers are written.
	FirstByteDelay time.Duration
	// Status, when not 0 or 2xx, answers with the dialect's error body for
	// that status (429 also gets Retry-After).
	Status int
	// ErrorMessage replaces the default message of a Status error or an
	// in-band error.
	ErrorMessage string
	// FailAfter > 0 cuts the connection after that many content deltas (text
	// pieces and tool-argument pieces), without a terminator, so the client
	// sees an unexpected EOF. With fewer deltas the cut comes after the last
	// one, before the stop events. A non-streaming reply is cut halfway
	// through its body. Needs a real net/http server (it panics with
	// http.ErrAbortHandler).
	FailAfter int
	// InBandErrorAfter > 0 (streaming only) sends the dialect's in-band error
	// event after that many content deltas and ends the body cleanly:
	// Anthropic `event: error`, OpenAI chat `data: {"error":{...}}`,
	// Responses `event: error`.
	InBandErrorAfter int
	// OmitStopReason (streaming only) ends the body cleanly after the content
	// but without the dialect's stop: OpenAI chat sends no finish_reason
	// chunk, usage chunk or [DONE]; Anthropic no message_delta or
	// message_stop; Responses no response.completed.
	OmitStopReason bool
	// Usage overrides the token counts, which default to rough estimates from
	// the request and reply lengths.
	Usage *Usage
}

// ToolCall is one call of a caller-defined tool.
type ToolCall struct {
	// ID defaults to a generated call_... (OpenAI) or toolu_... (Anthropic).
	ID   string
	Name string
	// Arguments is a JSON object as text; empty means "{}". Invalid JSON is
	// a scripting mistake and is answered with a 500 naming it.
	Arguments string
}

// Usage is token usage as the dialect reports it: InputTokens is OpenAI's
// prompt_tokens (cached included) and Anthropic's input_tokens (cache
// excluded).
type Usage struct {
	InputTokens         int
	OutputTokens        int
	CacheReadTokens     int // OpenAI cached_tokens, Anthropic cache_read_input_tokens
	CacheCreationTokens int // Anthropic cache_creation_input_tokens
	ReasoningTokens     int // OpenAI reasoning_tokens
}

// plan is a Reply resolved against one request: everything a dialect
// writer needs, with ids drawn and text split.
type plan struct {
	Reply
	model    string
	chunks   []string   // text deltas
	argParts [][]string // per tool call, argument deltas
	usage    Usage
	gen      *idGen
	created  int64
}

func (pl *plan) stopIsTool() bool { return len(pl.ToolCalls) > 0 }

func defaultText(lastUser string) string {
	r := []rune(lastUser)
	if len(r) > 60 {
		r = r[:60]
	}
	return "ok: " + string(r)
}

// splitText splits s into text deltas: n roughly equal pieces, or for n == 0
// one per word with its leading whitespace, merged down to maxTextChunks.
// Pieces never split a UTF-8 sequence.
func splitText(s string, n int) []string {
	if s == "" {
		return nil
	}
	if n <= 0 {
		words := splitWords(s)
		if len(words) <= maxTextChunks {
			return words
		}
		return mergeEvenly(words, maxTextChunks)
	}
	runes := utf8.RuneCountInString(s)
	n = min(n, runes)
	out := make([]string, 0, n)
	rest := s
	for i := range n {
		take := runes * (i + 1) / n
		take -= runes * i / n
		cut := 0
		for range take {
			_, size := utf8.DecodeRuneInString(rest[cut:])
			cut += size
		}
		out = append(out, rest[:cut])
		rest = rest[cut:]
	}
	return out
}

func splitWords(s string) []string {
	var cuts []int
	wsStart, seenWord := -1, false
	for i, r := range s {
		if unicode.IsSpace(r) {
			if wsStart < 0 {
				wsStart = i
			}
			continue
		}
		if wsStart >= 0 && seenWord {
			cuts = append(cuts, wsStart)
		}
		wsStart, seenWord = -1, true
	}
	out := make([]string, 0, len(cuts)+1)
	prev := 0
	for _, c := range cuts {
		out = append(out, s[prev:c])
		prev = c
	}
	return append(out, s[prev:])
}

func mergeEvenly(parts []string, n int) []string {
	out := make([]string, 0, n)
	for i := range n {
		lo, hi := len(parts)*i/n, len(parts)*(i+1)/n
		out = append(out, strings.Join(parts[lo:hi], ""))
	}
	return out
}

// splitArgs splits tool arguments into up to four deltas, the way models
// stream JSON a few characters at a time.
func splitArgs(args string) []string {
	n := min(4, utf8.RuneCountInString(args))
	if n == 0 {
		return nil
	}
	return splitText(args, n)
}

func estimateTokens(n int) int { return max(1, (n+3)/4) }

func validArgs(tc ToolCall) bool {
	if tc.Arguments == "" {
		return true
	}
	var obj map[string]json.RawMessage
	return json.Unmarshal([]byte(tc.Arguments), &obj) == nil
}
