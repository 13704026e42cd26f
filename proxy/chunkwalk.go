package proxy

import (
	"encoding/json"
	"strconv"

	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
	"github.com/perpetuity/perpetuity/proxy/wire/openai"
)

// The accumulator reads every event of every stream it relays, and
// encoding/json was the largest part of the relay's own CPU (in the CPU
// profile of `perpetuity-bench bench proxy --mode full`, 0.32 s of the
// relay's 0.97 s; the event's read and write were the rest). The walks here read the few fields it needs from the events
// that come once a token (chat chunks, Anthropic text deltas, Responses
// text deltas) in one pass over validated JSON (jsonx.Members), with no
// reflection. Each fills the same struct encoding/json would, and gives up
// (false) on anything it would not decide exactly as encoding/json does: a
// key that differs from a field's name only in case or is escaped (the
// request walk's keyIndex, skim.go), a key
// twice, a value of another type than its field's, a number that is not a
// plain int. The caller then decodes the event with encoding/json, into a
// zeroed struct, as before; FuzzChunkWalks holds the two to one result.

// chatChunk is what the accumulator reads of a chat completion chunk.
type chatChunk struct {
	Usage   *wireUsage      `json:"usage"`
	Error   json.RawMessage `json:"error"`
	Choices []chatChoice    `json:"choices"`
}

type chatChoice struct {
	Delta struct {
		Content string `json:"content"`
	} `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

// anthropicDelta is what the accumulator reads of content_block_delta.
type anthropicDelta struct {
	Delta struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"delta"`
}

// decodeChunk fills dst, a zero value, from data: by walk when walk can,
// else by encoding/json; false when data does not decode into dst.
func decodeChunk[T any](data []byte, dst *T, walk func([]byte, *T) bool) bool {
	if !json.Valid(data) {
		return false
	}
	if walk(data, dst) {
		return true
	}
	var zero T
	*dst = zero
	return json.Unmarshal(data, dst) == nil
}

// members walks the object b, calling fn with each member naming one of
// names (by its index), each at most once; false when b is not an object,
// a key is in doubt (keyIndex) or repeated, or fn says so. A JSON null, which
// encoding/json leaves its field alone for, is false too: callers take
// null for themselves first.
func members(b []byte, names []string, fn func(i int, val []byte) bool) bool {
	var seen uint32
	ok := true
	walked := jsonx.Members(b, func(key, val []byte) bool {
		i, sure := keyIndex(key, names)
		switch {
		case !sure:
			ok = false
		case i < 0:
			return true
		case seen&(1<<i) != 0:
			ok = false
		default:
			seen |= 1 << i
			ok = fn(i, val)
		}
		return ok
	})
	return walked && ok
}

// walkString sets dst from a JSON string, leaves it for null.
func walkString(b []byte, dst *string) bool {
	if jsonx.IsNull(b) {
		return true
	}
	s, ok := jsonx.String(b)
	if ok {
		*dst = s
	}
	return ok
}

// walkInt sets dst from a JSON number that is a plain int, leaves it for
// null.
func walkInt(b []byte, dst *int) bool {
	if jsonx.IsNull(b) {
		return true
	}
	if len(b) == 0 || b[0] != '-' && (b[0] < '0' || b[0] > '9') {
		return false
	}
	n, err := strconv.ParseInt(string(b), 10, 0)
	if err != nil {
		return false
	}
	*dst = int(n)
	return true
}

var (
	chatNames   = []string{"usage", "error", "choices"}
	choiceNames = []string{"delta", "finish_reason"}
	deltaNames  = []string{"content"}
	usageNames  = []string{"input_tokens", "output_tokens", "prompt_tokens", "completion_tokens"}
)

func walkChat(b []byte, ch *chatChunk) bool {
	return members(b, chatNames, func(i int, v []byte) bool {
		switch i {
		case 0:
			return walkUsage(v, &ch.Usage)
		case 1:
			ch.Error = json.RawMessage(v)
			return true
		default:
			return walkChoices(v, &ch.Choices)
		}
	})
}

func walkUsage(b []byte, dst **wireUsage) bool {
	if jsonx.IsNull(b) {
		*dst = nil
		return true
	}
	u := &wireUsage{}
	*dst = u
	return members(b, usageNames, func(i int, v []byte) bool {
		return walkInt(v, [...]*int{&u.InputTokens, &u.OutputTokens, &u.PromptTokens, &u.CompletionTokens}[i])
	})
}

func walkChoices(b []byte, dst *[]chatChoice) bool {
	if jsonx.IsNull(b) {
		*dst = nil
		return true
	}
	out := []chatChoice{} // as encoding/json makes of []
	ok := jsonx.Elements(b, func(v []byte) bool {
		var c chatChoice
		if !walkChoice(v, &c) {
			return false
		}
		out = append(out, c)
		return true
	})
	*dst = out
	return ok
}

// walkChoice reads one choice; null is the zero choice.
func walkChoice(b []byte, c *chatChoice) bool {
	return jsonx.IsNull(b) || members(b, choiceNames, func(i int, v []byte) bool {
		switch {
		case jsonx.IsNull(v):
			return true
		case i == 0:
			return members(v, deltaNames, func(_ int, v []byte) bool { return walkString(v, &c.Delta.Content) })
		}
		var s string
		if !walkString(v, &s) {
			return false
		}
		c.FinishReason = &s
		return true
	})
}

var (
	anthropicNames      = []string{"delta"}
	anthropicDeltaNames = []string{"type", "text"}
)

func walkAnthropicDelta(b []byte, d *anthropicDelta) bool {
	return members(b, anthropicNames, func(_ int, v []byte) bool {
		return jsonx.IsNull(v) || members(v, anthropicDeltaNames, func(i int, v []byte) bool {
			return walkString(v, [...]*string{&d.Delta.Type, &d.Delta.Text}[i])
		})
	})
}

var responsesNames = []string{"type", "delta", "response"}

// walkResponses reads an event that carries no response object (the text
// deltas); one that does (created, completed) is encoding/json's.
func walkResponses(b []byte, e *openai.ResponsesStreamEvent) bool {
	return members(b, responsesNames, func(i int, v []byte) bool {
		switch i {
		case 0:
			return walkString(v, &e.Type)
		case 1:
			return walkString(v, &e.Delta)
		default:
			return false
		}
	})
}
