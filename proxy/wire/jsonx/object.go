package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
	if i := o.find(k); i >= 0 {
		return o.members[i].val
	}
	return nil
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
