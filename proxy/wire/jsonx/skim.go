package jsonx

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Members and Elements walk JSON the caller has validated (json.Valid)
// without decoding it: encoding/json reads a value in full every time it
// is unmarshalled, twice (validating, then decoding), so a request whose
// messages are unmarshalled in layers (the body, its messages, each
// message, its content) was read some eight times over, and a coding
// agent's history of file contents is hundreds of kB. A walk finds each
// value's end in one pass and hands out slices of b.

// Members calls fn with each member of the object b, in order: the key as
// the bytes between its quotes (still escaped) and the value as it stands.
// It stops when fn returns false, and reports whether it walked the whole
// object (false too when b is not an object).
func Members(b []byte, fn func(key, val []byte) bool) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	if i = skipSpace(b, i+1); i < len(b) && b[i] == '}' {
		return true
	}
	for i < len(b) && b[i] == '"' {
		kend, _ := skipValue(b, i)
		if kend < 0 {
			return false
		}
		key := b[i+1 : kend-1]
		if i = skipSpace(b, kend); i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		vend, _ := skipValue(b, i)
		if vend <= i || !fn(key, b[i:vend]) {
			return false
		}
		switch i = skipSpace(b, vend); {
		case i < len(b) && b[i] == ',':
			i = skipSpace(b, i+1)
		case i < len(b) && b[i] == '}':
			return true
		default:
			return false
		}
	}
	return false
}

// Elements calls fn with each element of the array b, as Members does
// with an object's members.
func Elements(b []byte, fn func(val []byte) bool) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return false
	}
	if i = skipSpace(b, i+1); i < len(b) && b[i] == ']' {
		return true
	}
	for i < len(b) {
		end, _ := skipValue(b, i)
		if end <= i || !fn(b[i:end]) {
			return false
		}
		switch i = skipSpace(b, end); {
		case i < len(b) && b[i] == ',':
			i = skipSpace(b, i+1)
		case i < len(b) && b[i] == ']':
			return true
		default:
			return false
		}
	}
	return false
}

// String is the JSON string b decoded as encoding/json decodes it, and
// false when b is not a string. One with no escapes, in UTF-8, is its own
// bytes; only the others go through the decoder (which also replaces
// bytes that are not UTF-8).
func String(b []byte) (string, bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	if in := b[1 : len(b)-1]; bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
		return string(in), true
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return "", false
	}
	return s, true
}
