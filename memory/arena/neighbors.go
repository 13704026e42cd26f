package arena

// Neighbor is an item next to another in its conversation.
type Neighbor struct {
	ID     int64 // 0: none found
	Tokens uint32
	// Index is the neighbour's Hit.Index, for a caller that ranks it beside
	// the hits.
	Index int
}

// Neighbors returns the items just before and after the item at index (the
// Hit.Index of item id; false when that no longer holds) in its
// conversation (by id), looking at the owner's items that arrived within
// window places of it. A user's turns of one conversation arrive
// together, so the window holds them unless the user came back to the
// conversation after window other turns; reading them from the arena
// instead of the store saves a frame forty scattered row reads.
func (a *Arena) Neighbors(index int, id int64, window int) (prev, next Neighbor, ok bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	c, pos, ok := a.at(index)
	if !ok || c.ids[pos] != id {
		return prev, next, false
	}
	cs := a.users[c.user]
	k := 0
	for k < len(cs) && cs[k] != c {
		k++
	}
	if k == len(cs) {
		return prev, next, false
	}
	conv := c.convs[pos]
	// The window is walked a chunk's stretch at a time, the conversation
	// compared in a tight loop: 200 matches of a frame read 100k places.
	look := func(c *chunk, lo, hi int) {
		convs, ids := c.convs[lo:hi], c.ids[lo:hi]
		for j, cv := range convs {
			if cv != conv {
				continue
			}
			switch x := ids[j]; {
			case x < id && x > prev.ID:
				prev = Neighbor{ID: x, Tokens: c.toks[lo+j], Index: handle(c.slot, lo+j)}
			case x > id && (next.ID == 0 || x < next.ID):
				next = Neighbor{ID: x, Tokens: c.toks[lo+j], Index: handle(c.slot, lo+j)}
			}
		}
	}
	// Backwards, then forwards, across chunk boundaries.
	for left, kk, hi := window, k, pos; left > 0 && kk >= 0; kk-- {
		if kk < k {
			hi = cs[kk].n()
		}
		lo := max(0, hi-left)
		look(cs[kk], lo, hi)
		left -= hi - lo
	}
	for left, kk, lo := window, k, pos+1; left > 0 && kk < len(cs); kk++ {
		if kk > k {
			lo = 0
		}
		hi := min(cs[kk].n(), lo+left)
		look(cs[kk], lo, hi)
		left -= hi - lo
	}
	return prev, next, true
}
