package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Object is a JSON object whose keys keep their order. It is either built
// key by key, as a wire type's MarshalJSON writes the keys in the order the
// real API does, or parsed from a provider's body or event and edited in
// place, so that the members nobody touches come back as they came, in the
// same order. Values are written compact, as the providers write theirs.
// The first encoding error sticks and is returned by Bytes.
type Object struct {
	members []member
	err     error
	extra   map[string]json.RawMessage
	used    map[string]bool
}

type member struct {
	key string
	val json.RawMessage
	// encoded: val was encoded here, so it is compact already.
	encoded bool
}

// ParseObject reads a JSON object for editing. A key that comes twice keeps
// its first place and its last value.
func ParseObject(b []byte) (*Object, error) {
	if o, ok := scanObject(b, false); ok {
		return o, nil
	}
	return parseByDecoder(b)
}

// ParseValidObject is ParseObject for b that is valid JSON already (a body
// the proxy wrote itself) and does not change while the object is used:
// its values are not validated again and stay slices of b. The memory
// tools' offer goes through it, and a coding agent's request keeps its
// exchange in flight, hundreds of kB, which validating and copying took
// milliseconds to read again.
func ParseValidObject(b []byte) (*Object, error) {
	if o, ok := scanObject(b, true); ok {
		return o, nil
	}
	return parseByDecoder(b)
}

// scanObject is ParseObject's fast path. Every body the proxy sends and
// most it receives pass through ParseObject, tens of kB with a frame in
// them; the decoder reads each member value three times (scanning for its
// end, validating it, copying it) and the values then get compacted again
// on the way out. Here a value's end is found in one pass that also notes
// whether it is compact already (then written out as it is), and the
// value is validated once. Whatever it is not sure of (not valid JSON, a
// key with escapes or not UTF-8) goes to decodeObject, so the result and the errors are
// the decoder's.
func scanObject(b []byte, valid bool) (*Object, bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	o := &Object{}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return o, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, false
		}
		end, _ := skipValue(b, i)
		if end < 0 || bytes.IndexByte(b[i:end], '\\') >= 0 || !json.Valid(b[i:end]) {
			return nil, false
		}
		key := b[i+1 : end-1]
		if !utf8.Valid(key) { // the decoder replaces what is not UTF-8
			return nil, false
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		i = skipSpace(b, i+1)
		end, compact := skipValue(b, i)
		if end < 0 || (!valid && !json.Valid(b[i:end])) {
			return nil, false
		}
		val := b[i:end]
		if !valid {
			val = bytes.Clone(val)
		}
		o.put(string(key), val, compact)
		i = skipSpace(b, end)
		if i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case '}':
			return o, true
		case ',':
			i = skipSpace(b, i+1)
		default:
			return nil, false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the value starting at b[i] (-1 when it has
// none) and whether it holds no whitespace outside its strings. It checks
// only the nesting: the caller validates the value.
func skipValue(b []byte, i int) (end int, compact bool) {
	compact = true
	depth := 0
	for ; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if i >= len(b) {
				return -1, false
			}
			if depth == 0 {
				return i + 1, compact
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i, compact // the end of a number or literal
			}
			if depth--; depth == 0 {
				return i + 1, compact
			}
		case ' ', '\t', '\n', '\r', ',', ':':
			if depth == 0 {
				return i, compact
			}
			if c != ',' && c != ':' {
				compact = false
			}
		}
	}
	if depth != 0 {
		return -1, false
	}
	return i, compact
}

// parseByDecoder is ParseObject by the decoder.
func parseByDecoder(b []byte) (*Object, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	o := &Object{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("object key %v is not a string", tok)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o.put(k, v, false)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return o, nil
}

// IsNull reports a JSON null.
func IsNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

func (o *Object) find(k string) int {
	for i := range o.members {
		if o.members[i].key == k {
			return i
		}
	}
	return -1
}

// put sets k in its place, or last when it is new.
func (o *Object) put(k string, v json.RawMessage, encoded bool) {
	if i := o.find(k); i >= 0 {
		o.members[i].val, o.members[i].encoded = v, encoded
		return
	}
	o.members = append(o.members, member{key: k, val: v, encoded: encoded})
}

// Get is a member's value (nil when absent).
func (o *Object) Get(k string) json.RawMessage {
	v, _ := o.GetCompact(k)
	return v
}

// GetCompact is Get, and whether the value is compact already (encoded
// here, or parsed without whitespace): an edit of its bytes that keeps it
// so may be set back with SetCompact.
func (o *Object) GetCompact(k string) (json.RawMessage, bool) {
	if i := o.find(k); i >= 0 {
		return o.members[i].val, o.members[i].encoded
	}
	return nil, false
}

// Has reports a member present with a value other than null.
func (o *Object) Has(k string) bool {
	i := o.find(k)
	return i >= 0 && !IsNull(o.members[i].val)
}

// Str reads a string member ("" when absent or not a string).
func (o *Object) Str(k string) string {
	var s string
	_ = json.Unmarshal(o.Get(k), &s)
	return s
}

// Array reads an array member (nil when absent or not an array).
func (o *Object) Array(k string) []json.RawMessage {
	var a []json.RawMessage
	_ = json.Unmarshal(o.Get(k), &a)
	return a
}

// Keys are the object's keys, in order.
func (o *Object) Keys() []string {
	keys := make([]string, len(o.members))
	for i, m := range o.members {
		keys[i] = m.key
	}
	return keys
}

// Del removes a member.
func (o *Object) Del(k string) {
	if i := o.find(k); i >= 0 {
		o.members = append(o.members[:i], o.members[i+1:]...)
	}
}

// UseExtra registers the extras of a leniently decoded value before any key
// is set: a key set later takes its extra's verbatim value instead (the
// typed field could not hold it), and SetExtra emits only the rest.
func (o *Object) UseExtra(extra map[string]json.RawMessage) {
	o.extra = extra
}

// Set sets key to v encoded by Marshal, or to the registered extra value
// for key if there is one. A key already present keeps its place.
func (o *Object) Set(key string, v any) {
	if o.err != nil {
		return
	}
	if raw, ok := o.extra[key]; ok {
		o.SetRaw(key, raw)
		return
	}
	raw, err := Marshal(v)
	if err != nil {
		o.err = fmt.Errorf("%s: %w", key, err)
		return
	}
	o.put(key, raw, true)
}

// SetRaw sets key to an already encoded value; an empty value is written
// as null. A key taken from the registered extras is not set again.
func (o *Object) SetRaw(key string, raw []byte) {
	if o.err != nil || o.used[key] {
		return
	}
	if v, ok := o.extra[key]; ok {
		if o.used == nil {
			o.used = map[string]bool{}
		}
		o.used[key] = true
		raw = v
	}
	o.put(key, raw, false)
}

// SetCompact is SetRaw for a value that is valid, compact JSON (see
// GetCompact): it is written out as it is, not compacted again. A body
// holding a frame is tens of kB.
func (o *Object) SetCompact(key string, raw []byte) {
	if o.err != nil || o.used[key] {
		return
	}
	if _, ok := o.extra[key]; ok {
		o.SetRaw(key, raw)
		return
	}
	o.put(key, raw, true)
}

// SetExtra adds every key of extra in sorted order, except keys an earlier
// Set already took from the registered extras.
func (o *Object) SetExtra(extra map[string]json.RawMessage) {
	for _, k := range sortedKeys(extra) {
		if !o.used[k] {
			o.SetRaw(k, extra[k])
		}
	}
}

// Bytes returns the encoded object.
func (o *Object) Bytes() ([]byte, error) {
	if o.err != nil {
		return nil, o.err
	}
	var b bytes.Buffer
	size := 2
	for _, m := range o.members {
		size += len(m.key) + len(m.val) + 4
	}
	b.Grow(size)
	b.WriteByte('{')
	for i, m := range o.members {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		n := b.Len()
		switch {
		case len(m.val) == 0:
			b.WriteString("null")
		case m.encoded:
			b.Write(m.val)
		case json.Compact(&b, m.val) != nil:
			// Not JSON after all: written as it was set.
			b.Truncate(n)
			b.Write(m.val)
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// JSON is Bytes for an object edited with values that always encode
// (strings, numbers, raw JSON and slices of those): an encoding error is a
// bug in the caller, and panics.
func (o *Object) JSON() []byte {
	b, err := o.Bytes()
	if err != nil {
		panic("jsonx: " + err.Error())
	}
	return b
}

// appendValue appends an encoded value as it is, null when empty.
func appendValue(dst, raw []byte) []byte {
	if len(raw) == 0 {
		return append(dst, "null"...)
	}
	return append(dst, raw...)
}
