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
	look := func(c *chunk, i int) {
		if c.convs[i] != conv {
			return
		}
		switch x := c.ids[i]; {
		case x < id && x > prev.ID:
			prev = Neighbor{ID: x, Tokens: c.toks[i], Index: handle(c.slot, i)}
		case x > id && (next.ID == 0 || x < next.ID):
			next = Neighbor{ID: x, Tokens: c.toks[i], Index: handle(c.slot, i)}
		}
	}
	// Backwards, then forwards, across chunk boundaries.
	for n, kk, i := 0, k, pos-1; n < window; n++ {
		for i < 0 {
			if kk--; kk < 0 {
				break
			}
			i = cs[kk].n() - 1
		}
		if kk < 0 {
			break
		}
		look(cs[kk], i)
		i--
	}
	for n, kk, i := 0, k, pos+1; n < window; n++ {
		for kk < len(cs) && i >= cs[kk].n() {
			kk, i = kk+1, 0
		}
		if kk == len(cs) {
			break
		}
		look(cs[kk], i)
		i++
	}
	return prev, next, true
}
