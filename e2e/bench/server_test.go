package bench

import (
	"encoding/json"
	"testing"
)

// TestPaddedChatBody: the direct request standing in for a proxied one is
// that size exactly, a valid chat request asking the same question.
func TestPaddedChatBody(t *testing.T) {
	t.Parallel()
	base := len(chatBodyFor(benchModel, "What did we decide?", false))
	for _, size := range []int{0, base, base + 10, base + 40, 17_093} {
		b := paddedChatBody(benchModel, "What did we decide?", size)
		var req struct {
			Model    string
			Messages []struct{ Role, Content string }
		}
		if err := json.Unmarshal(b, &req); err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		want := max(size, base)
		if size > base && size < base+len(`{"role":"system","content":""},`)+1 {
			want = base // too little room for a message: the plain question
		}
		if len(b) != want || req.Model != benchModel || req.Messages[len(req.Messages)-1].Content != "What did we decide?" {
			t.Errorf("size %d: got %d bytes (want %d), model %q, messages %+v", size, len(b), want, req.Model, req.Messages)
		}
	}
}
