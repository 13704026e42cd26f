package proxy

import (
	"slices"
	"sync"
	"time"

	"github.com/perpetuity/perpetuity/memory"
)

// A coding agent answers one question in a loop of rounds: the model calls
// the harness's tools, and each round sends the question again with the
// exchange so far after it. Built afresh each round, the frame before that
// exchange changed (heat moved, a stamp aged from "just now" to "1 minute
// ago"), so the provider's prompt cache missed on everything after it, the
// tool results with whole files in them, on every round; and each round
// paid for a frame it did not need. The round's frame is the first
// round's, kept here: it already ends with the question, and holds nothing
// of the loop (the model's turns of the loop were not stored yet).
//
// A frame is taken again only for the same question of the same
// conversation, asked the same way (budget, tools, inspector), while its
// capture reports that the question is stored as the frame saw it and
// that no purge or redaction was logged since the frame read memory,
// whichever process made it (store.Captured.Erased), and that this
// process applied none either.

// loopFrameTTL is how long a question's frame is taken again; a model that
// writes a long file between rounds takes minutes.
const loopFrameTTL = 10 * time.Minute

// loopFramesBudget bounds the frames kept, by their text; the oldest go
// first.
const loopFramesBudget = 16 << 20

type loopKey struct {
	tenant, user, conv int64
	live               string // memory.Fingerprint of the question, as capture takes it
	budget             int
	tools, explain     bool
}

type loopFrame struct {
	frame    memory.Frame
	live     []int64 // the question's stored items
	erasures uint64  // the engine's count when the frame was read
	at       time.Time
	size     int
}

type loopFrames struct {
	mu    sync.Mutex
	m     map[loopKey]loopFrame
	order []loopKey // oldest first
	used  int
}

func newLoopFrames() *loopFrames { return &loopFrames{m: map[loopKey]loopFrame{}} }

// put keeps f, the frame of a question just stored as live.
func (c *loopFrames) put(k loopKey, f memory.Frame, live []int64, erasures uint64, now time.Time) {
	size := 256
	for _, t := range f.Turns {
		size += len(t.Text) + 32
	}
	if size > loopFramesBudget/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[k]; ok {
		c.used -= old.size
	} else {
		c.order = append(c.order, k)
	}
	c.m[k] = loopFrame{frame: f, live: slices.Clone(live), erasures: erasures, at: now, size: size}
	c.used += size
	for c.used > loopFramesBudget && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		if e, ok := c.m[old]; ok {
			c.used -= e.size
			delete(c.m, old)
		}
	}
}

// get is k's frame if it may be taken again: kept within the TTL, before
// this process applied another erasure of the tenant.
func (c *loopFrames) get(k loopKey, erasures uint64, now time.Time) (loopFrame, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok || e.erasures != erasures || now.Sub(e.at) > loopFrameTTL {
		return loopFrame{}, false
	}
	return e, true
}
