package proxy

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestEncodeWith: the body with the frame written in place has the keys
// sorted, each value as it came (an empty one as null), and the frame's
// messages byte for byte; it reads as encoding the whole map does.
func TestEncodeWith(t *testing.T) {
	t.Parallel()
	msgs, _ := json.Marshal([]frameMessage{{Role: "user", Content: "<memory> a & b"}, {Role: "assistant", Content: "ok"}})
	fields := map[string]json.RawMessage{
		"model": json.RawMessage(`"gpt-4o"`), "stream": json.RawMessage(`true`), "z<": json.RawMessage(`{"a" : [1, 2], "h": "<b>"}`),
		"messages": json.RawMessage(`["harness history, replaced"]`), "empty": nil, "a": json.RawMessage(`null`),
	}
	want := `{"a":null,"empty":null,"messages":` + string(msgs) + `,"model":"gpt-4o","stream":true,"z\u003c":{"a" : [1, 2], "h": "<b>"}}`
	got, err := encodeWith(fields, "messages", msgs)
	if err != nil || string(got) != want {
		t.Fatalf("got  %s (%v)\nwant %s", got, err, want)
	}
	all := map[string]json.RawMessage{}
	for k, v := range fields {
		all[k] = v
	}
	all["messages"] = msgs
	if marshalled, _ := json.Marshal(all); !sameJSON(got, marshalled) {
		t.Fatalf("got %s, which reads unlike json.Marshal's %s", got, marshalled)
	}
	// The list key may be new to the fields (a body that had none).
	delete(fields, "messages")
	if got, err := encodeWith(fields, "messages", msgs); err != nil || string(got) != want {
		t.Fatalf("list key not in the fields: %s, %v", got, err)
	}
	// No list: the fields alone.
	if got, err := encodeWith(fields, "messages", nil); err != nil || string(got) != `{"a":null,"empty":null,"model":"gpt-4o","stream":true,"z\u003c":{"a" : [1, 2], "h": "<b>"}}` {
		t.Fatalf("no list: %s, %v", got, err)
	}
}

// sameJSON: a and b decode to the same value.
func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
