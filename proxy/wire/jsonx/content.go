package jsonx

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// A message's content is a string, an array or null in both dialects
// (Anthropic's array holds blocks, OpenAI's parts), and a wire type keeps
// it as a *string and a slice of which at most one is set.

// UnmarshalContent decodes data, a JSON string, array of E or null, into *s
// or *list: exactly one of them is set, or neither for null. Both are
// cleared first, and stay clear when decoding fails.
func UnmarshalContent[E any](data []byte, s **string, list *[]E) error {
	*s, *list = nil, nil
	switch FirstByte(data) {
	case 'n':
		return nil
	case '"':
		var v string
		if err := json.Unmarshal(data, &v); err != nil {
			return err
		}
		*s = &v
		return nil
	case '[':
		v := []E{}
		if err := json.Unmarshal(data, &v); err != nil {
			return err
		}
		*list = v
		return nil
	}
	return fmt.Errorf("content: want string, array or null, got %.20s", data)
}

// MarshalContent encodes the content UnmarshalContent decodes: the string
// if set, else the array if set (empty stays []), else null.
func MarshalContent[E any](s *string, list []E) ([]byte, error) {
	switch {
	case s != nil:
		return Marshal(*s)
	case list != nil:
		return Marshal(list)
	}
	return []byte("null"), nil
}

// FirstByte is the first byte of a JSON value past leading whitespace (0
// for none): which of a union's forms it is.
func FirstByte(data []byte) byte {
	data = bytes.TrimLeft(data, " \t\r\n")
	if len(data) == 0 {
		return 0
	}
	return data[0]
}
