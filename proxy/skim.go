package proxy

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/perpetuity/perpetuity/proxy/dialect"
	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
	"github.com/perpetuity/perpetuity/proxy/wire/openai"
)

// A coding agent sends its whole history with every request: file
// contents in tool results, hundreds of kB. Decoding it in layers with
// encoding/json (the body into fields, the messages, each message, its
// content, its content again for tool results) read every byte some eight
// times: about 20 ms of CPU for a 500 kB body, on the request's path. A
// body json.Valid has passed is instead walked once (jsonx.Members,
// Elements) for what parseInbound reads: the top-level fields, and each
// message's role, content parts' types and texts, and tool calls. Where
// the walk meets anything encoding/json would read differently or refuse
// (a key with escapes, a key that differs from a field's only in case, a
// value of the wrong type, a role the dialect lacks), it gives up and the
// decoder reads the body as before, so results and errors stay the
// decoder's; TestSkimMatchesDecoder and FuzzSkimMatchesDecoder hold that.

// skimFields reads the top-level members of a valid body into fields (the
// last of a repeated key wins, as in encoding/json); false when body is
// not an object or a key is not plain.
func skimFields(body []byte, fields *map[string]json.RawMessage) bool {
	m := map[string]json.RawMessage{}
	ok := jsonx.Members(body, func(k, v []byte) bool {
		if !plainKey(k) {
			return false
		}
		m[string(k)] = v
		return true
	})
	if ok {
		*fields = m
	}
	return ok
}

// plainKey: a key encoding/json reads as its own bytes.
func plainKey(k []byte) bool { return bytes.IndexByte(k, '\\') < 0 && utf8.Valid(k) }

// member picks the members of a walked object that a decoder's struct
// with these keys would take. It reports false for a key the struct would
// take but the walk cannot tell apart (escaped, or another case of one).
func member(k []byte, keys []string, vals [][]byte, v []byte) bool {
	i, sure := keyIndex(k, keys)
	if i >= 0 {
		vals[i] = v
	}
	return sure
}

// keyIndex says which of keys the walked key k (as it stands between its
// quotes) names, -1 for none, and false when encoding/json might match it
// to one of them though it is not that key exactly: it unescapes keys and
// matches them by Unicode case folding.
func keyIndex(k []byte, keys []string) (int, bool) {
	for i, key := range keys {
		if string(k) == key {
			return i, true
		}
	}
	if bytes.IndexByte(k, '\\') >= 0 {
		return -1, false
	}
	// keys are ASCII, so an ASCII k folds to one only at its length: the
	// chunk walks ask this of every key of every streamed event, and
	// folding each against every name cost them 7-13% (BenchmarkAccumulateChunk).
	ascii := true
	for _, c := range k {
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	for _, key := range keys {
		if (!ascii || len(k) == len(key)) && strings.EqualFold(string(k), key) {
			return -1, false
		}
	}
	return -1, true
}

var messageKeys = [3]string{"role", "content", "tool_calls"}

// skimMessages is decodeMessages for a valid messages field, false where
// the decoder must read it.
func skimMessages(d dialect.Dialect, raw json.RawMessage) ([]inMessage, bool) {
	out, ok := skimEach(raw, func(v []byte) (inMessage, bool) { return skimMessage(d, v) })
	return out, ok && len(out) > 0
}

// skimEach reads each element of the array raw with read, false when raw
// is not an array or read gives way on one.
func skimEach(raw []byte, read func([]byte) (inMessage, bool)) ([]inMessage, bool) {
	var out []inMessage
	ok := jsonx.Elements(raw, func(v []byte) bool {
		m, good := read(v)
		out = append(out, m)
		return good
	})
	return out, ok
}

// stringValues decodes each present value of vals into the string dsts[i]
// points to (nil: left alone), false when one is not a string.
func stringValues(vals [][]byte, dsts ...*string) bool {
	for i, dst := range dsts {
		if dst == nil || vals[i] == nil {
			continue
		}
		s, ok := jsonx.String(vals[i])
		if !ok {
			return false
		}
		*dst = s
	}
	return true
}

func skimMessage(d dialect.Dialect, raw []byte) (inMessage, bool) {
	var vals [3][]byte // messageKeys
	if !jsonx.Members(raw, func(k, v []byte) bool { return member(k, messageKeys[:], vals[:], v) }) {
		return inMessage{}, false
	}
	role, ok := jsonx.String(vals[0])
	if !ok || checkRole(d, role) != nil {
		return inMessage{}, false
	}
	out := inMessage{role: role, raw: raw}
	if role == "tool" || role == "function" {
		out.toolOnly, out.nonText = true, true
		return out, true
	}
	text, nonText, toolResult, ok := skimContent(vals[1])
	if !ok {
		return inMessage{}, false
	}
	calls := vals[2]
	out.text, out.nonText = text, nonText || (len(calls) > 0 && !jsonx.IsNull(calls))
	if d == dialect.AnthropicMessages && role == "user" && nonText && toolResult {
		out.toolOnly = true
	}
	return out, true
}

var partKeys = [2]string{"type", "text"}

// skimContent is contentText (and hasToolResult) for a valid content
// field.
func skimContent(raw []byte) (text string, nonText, toolResult, ok bool) {
	if len(raw) == 0 || jsonx.IsNull(raw) {
		return "", false, false, true
	}
	if raw[0] == '"' {
		s, ok := jsonx.String(raw)
		return s, false, false, ok
	}
	var b strings.Builder
	ok = jsonx.Elements(raw, func(v []byte) bool {
		var vals [2][]byte // partKeys
		if !jsonx.Members(v, func(k, v []byte) bool { return member(k, partKeys[:], vals[:], v) }) {
			return false
		}
		var p contentPart
		if !stringValues(vals[:], &p.Type, &p.Text) {
			return false
		}
		nonText = p.join(&b) || nonText
		toolResult = toolResult || p.Type == "tool_result"
		return true
	})
	return b.String(), nonText, toolResult, ok
}

var itemKeys = [4]string{"type", "role", "content", "call_id"}

// skimResponsesItems is decodeResponsesItems for a valid input array.
func skimResponsesItems(raw []byte) ([]inMessage, bool) { return skimEach(raw, skimResponsesItem) }

func skimResponsesItem(raw []byte) (inMessage, bool) {
	var vals [4][]byte // itemKeys
	if !jsonx.Members(raw, func(k, v []byte) bool { return member(k, itemKeys[:], vals[:], v) }) {
		return inMessage{}, false
	}
	var it openai.ResponsesInputItem
	if !stringValues(vals[:], &it.Type, &it.Role, nil, &it.CallID) {
		return inMessage{}, false
	}
	out := inMessage{raw: raw}
	switch {
	case it.IsMessage():
		if checkItemRole(it.Role) != nil {
			return inMessage{}, false
		}
		text, nonText, _, ok := skimContent(vals[2])
		if !ok {
			return inMessage{}, false
		}
		out.role, out.text, out.nonText = it.Role, text, nonText
	case it.IsToolOutput():
		out.role, out.toolOnly, out.nonText = "tool", true, true
	default:
		out.role, out.nonText = "assistant", true
	}
	return out, true
}
