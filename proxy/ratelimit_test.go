package proxy

import "testing"

func TestSpent(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		r    reply
		sent int
		want int
	}{
		{"provider usage", reply{text: "hi", usage: usage{in: 120, out: 30}}, 4000, 150},
		{"no usage: bytes over four", reply{text: "abcdefgh"}, 392, 100},
		{"no reply, no cost", reply{}, 4000, 0},
	} {
		if got := spent(tt.r, tt.sent); got != tt.want {
			t.Errorf("%s: spent = %d, want %d", tt.name, got, tt.want)
		}
	}
}
