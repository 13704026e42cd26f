package proxy

import (
	"encoding/json"
	"testing"
)

// TestEncodeWith: the body with the frame written in place is the body
// encoding the whole map makes: keys sorted, values compact and HTML
// escaped, the frame's messages byte for byte.
func TestEncodeWith(t *testing.T) {
	t.Parallel()
	msgs, _ := json.Marshal([]frameMessage{{Role: "user", Content: "<memory> a & b"}, {Role: "assistant", Content: "ok"}})
	fields := map[string]json.RawMessage{
		"model": json.RawMessage(`"gpt-4o"`), "stream": json.RawMessage(` true `), "z<": json.RawMessage(`{"a" : [1, 2], "h": "<b>"}`),
		"messages": json.RawMessage(`["harness history, replaced"]`), "empty": nil, "a": json.RawMessage(`null`),
	}
	got, err := encodeWith(fields, "messages", msgs)
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]json.RawMessage{}
	for k, v := range fields {
		all[k] = v
	}
	all["messages"] = msgs
	want, err := json.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// The list key may be new to the fields (a body that had none).
	delete(fields, "messages")
	if got, err := encodeWith(fields, "messages", msgs); err != nil || string(got) != string(want) {
		t.Fatalf("list key not in the fields: %s, %v", got, err)
	}
}
