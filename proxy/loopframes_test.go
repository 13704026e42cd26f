package proxy

import (
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
)

// TestLoopFrames: a kept frame is taken again within its TTL and while the
// tenant's erasure count stands; the oldest go first past the budget.
func TestLoopFrames(t *testing.T) {
	t.Parallel()
	now := time.Now()
	big := memory.Frame{Turns: []memory.Turn{{Role: "user", Text: strings.Repeat("x", loopFramesBudget/5)}}}
	key := func(conv int64) loopKey { return loopKey{tenant: 1, user: 2, conv: conv, live: "q"} }
	for _, tc := range []struct {
		name     string
		fill     func(c *loopFrames)
		get      loopKey
		erasures uint64
		at       time.Time
		want     bool
	}{
		{"kept", func(c *loopFrames) { c.put(key(1), big, []int64{7}, 3, now) }, key(1), 3, now.Add(time.Minute), true},
		{"another question", func(c *loopFrames) { c.put(key(1), big, []int64{7}, 3, now) }, key(2), 3, now, false},
		{"an erasure applied since", func(c *loopFrames) { c.put(key(1), big, []int64{7}, 3, now) }, key(1), 4, now, false},
		{"past the TTL", func(c *loopFrames) { c.put(key(1), big, []int64{7}, 3, now) }, key(1), 3, now.Add(loopFrameTTL + time.Second), false},
		{"the oldest out past the budget", func(c *loopFrames) {
			for conv := int64(1); conv <= 6; conv++ {
				c.put(key(conv), big, []int64{7}, 3, now)
			}
		}, key(1), 3, now, false},
		{"the newest kept past the budget", func(c *loopFrames) {
			for conv := int64(1); conv <= 6; conv++ {
				c.put(key(conv), big, []int64{7}, 3, now)
			}
		}, key(6), 3, now, true},
		{"a frame too large is not kept", func(c *loopFrames) {
			c.put(key(1), memory.Frame{Turns: []memory.Turn{{Text: strings.Repeat("x", loopFramesBudget/2)}}}, nil, 3, now)
		}, key(1), 3, now, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newLoopFrames()
			tc.fill(c)
			if _, ok := c.get(tc.get, tc.erasures, tc.at); ok != tc.want {
				t.Fatalf("taken %v, want %v", ok, tc.want)
			}
			if c.used > loopFramesBudget {
				t.Fatalf("%d bytes kept past the budget", c.used)
			}
		})
	}
}
