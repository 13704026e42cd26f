// Package jsonx is the JSON toolkit behind the wire types. encoding/json
// alone cannot do two things the proxy needs: keep fields it does not know
// (so a request can be decoded, edited and re-encoded without losing a
// provider-specific parameter) and emit keys in a fixed order that depends
// on a union's type (so translated output matches what the real API sends,
// byte for byte). It also never HTML-escapes, as neither provider does.
// The same ordered Object edits a provider's body or event in place (the
// memory-tool loop's continuation requests and stitched streams), leaving
// the members it does not touch as they came.
package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Marshal encodes v like json.Marshal, without HTML escaping and without a
// trailing newline.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// DecodeObject decodes the JSON object data into the struct dst points to,
// matching keys to `json` tags exactly (encoding/json folds case; the APIs do
// not), and returns the keys no field claimed. dst should be a method-less
// alias type so that its fields decode with their own UnmarshalJSON.
func DecodeObject(data []byte, dst any) (map[string]json.RawMessage, error) {
	return decodeObject(data, dst, false)
}

// DecodeObjectLenient is DecodeObject for union members whose variants
// reuse a key with different types (an Anthropic search_result block's
// "source" is a string, an image's an object): a value that does not fit
// its field stays in the returned extras, verbatim, instead of failing.
func DecodeObjectLenient(data []byte, dst any) (map[string]json.RawMessage, error) {
	return decodeObject(data, dst, true)
}

func decodeObject(data []byte, dst any, lenient bool) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("expected a JSON object, got null")
	}
	v := reflect.ValueOf(dst).Elem()
	t := v.Type()
	for i := range t.NumField() {
		name := fieldName(t.Field(i))
		if name == "" {
			continue
		}
		raw, ok := m[name]
		if !ok {
			continue
		}
		field := v.Field(i)
		if err := json.Unmarshal(raw, field.Addr().Interface()); err != nil {
			if !lenient {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			field.SetZero()
			continue
		}
		delete(m, name)
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// EncodeObject encodes the struct src (a method-less alias type) and then
// the extra keys in sorted order, skipping any extra key that a field of src
// already owns.
func EncodeObject(src any, extra map[string]json.RawMessage) ([]byte, error) {
	b, err := Marshal(src)
	if err != nil {
		return nil, err
	}
	if len(extra) == 0 {
		return b, nil
	}
	owned := map[string]bool{}
	t := reflect.TypeOf(src)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for i := range t.NumField() {
		if name := fieldName(t.Field(i)); name != "" {
			owned[name] = true
		}
	}
	out := b[:len(b)-1]
	members := len(b) > 2 // "{}" has no members; anything longer has at least one
	for _, k := range sortedKeys(extra) {
		if owned[k] {
			continue
		}
		if members {
			out = append(out, ',')
		}
		kb, _ := Marshal(k)
		out = append(append(out, kb...), ':')
		out = appendValue(out, extra[k])
		members = true
	}
	return append(out, '}'), nil
}

func fieldName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return ""
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		return f.Name
	}
	return name
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
