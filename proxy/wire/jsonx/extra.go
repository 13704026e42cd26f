package jsonx

import "encoding/json"

// A wire type that keeps the keys it does not model decodes through a
// method-less alias of itself (so that its UnmarshalJSON is not entered
// again) and keeps what no field claimed in its Extra field, which is
// tagged `json:"-"`. Its methods are then one line each:
//
//	type message Message
//
//	func (m *Message) UnmarshalJSON(data []byte) error {
//		return jsonx.UnmarshalExtra(data, (*message)(m), &m.Extra)
//	}
//
//	func (m Message) MarshalJSON() ([]byte, error) {
//		return jsonx.EncodeObject(message(m), m.Extra)
//	}

// UnmarshalExtra decodes the JSON object data into *dst, the wire value seen
// as its alias type A, and the keys no field of A claimed into *extra (nil
// when there are none). extra may point into *dst: it is set last. On error
// neither is touched, so a value that fails to decode keeps what it held.
func UnmarshalExtra[A any](data []byte, dst *A, extra *map[string]json.RawMessage) error {
	return unmarshalExtra(data, dst, extra, DecodeObject)
}

// UnmarshalExtraLenient is UnmarshalExtra for union types whose variants
// reuse a key with different types: a value that does not fit its field
// stays in *extra verbatim (see DecodeObjectLenient).
func UnmarshalExtraLenient[A any](data []byte, dst *A, extra *map[string]json.RawMessage) error {
	return unmarshalExtra(data, dst, extra, DecodeObjectLenient)
}

func unmarshalExtra[A any](data []byte, dst *A, extra *map[string]json.RawMessage,
	decode func([]byte, any) (map[string]json.RawMessage, error)) error {
	var a A
	rest, err := decode(data, &a)
	if err != nil {
		return err
	}
	*dst = a
	*extra = rest
	return nil
}
