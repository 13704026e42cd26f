package memory

import (
	"container/list"
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/perpetuity/perpetuity/memory/store"
)

// itemCache keeps, per tenant, what frames render of items this process
// stored or read (store.ItemText: fixed at capture), so a frame reads from
// the store only the labels and the items it does not hold. It is bounded
// in bytes, least recently used first out.
//
// A purge or a redaction is the only change to a stored item. Both reach this process
// through the tenant log, as they reach its arenas: the catch-up that
// applies one to the arena drops the user's items here in the same step
// (resident.go apply), before any frame scans the caught-up arena. A frame
// reads the cache only after its own catch-up, so it never renders what a
// purge it has seen removed. A fill that read the store before a purge was
// applied is dropped (epochs): what it read may be gone.
type itemCache struct {
	mu     sync.Mutex
	budget int // bytes; <= 0 keeps nothing
	used   int
	lru    list.List // of *cachedItem, most recently used at the front
	by     map[itemKey]*list.Element
	owners map[ownerKey]map[int64]struct{} // for a purge: each user's cached ids
	epochs map[int64]uint64                // per tenant, purges and redactions applied
}

type itemKey struct{ tenant, id int64 }

type ownerKey struct{ tenant, user int64 }

type cachedItem struct {
	tenant int64
	it     store.ItemText
	size   int
}

// itemOverhead is what an entry costs besides its strings: the item, its
// list element and its places in both maps, roughly.
const itemOverhead = 256

func newItemCache(budget int) *itemCache {
	return &itemCache{budget: budget, by: map[itemKey]*list.Element{},
		owners: map[ownerKey]map[int64]struct{}{}, epochs: map[int64]uint64{}}
}

// epoch is the tenant's purge count, to take before reading what put stores.
func (c *itemCache) epoch(tenantID int64) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epochs[tenantID]
}

// put keeps items of the tenant read or stored since epoch was taken;
// nothing when a purge was applied since.
func (c *itemCache) put(tenantID int64, epoch uint64, items []store.ItemText) {
	if c.budget <= 0 || len(items) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epochs[tenantID] != epoch {
		return
	}
	for _, it := range items {
		k := itemKey{tenantID, it.ID}
		if e, ok := c.by[k]; ok {
			c.lru.MoveToFront(e)
			continue
		}
		ci := &cachedItem{tenant: tenantID, it: it, size: itemOverhead + len(it.Body) + len(it.Role) + len(it.Speaker)}
		if ci.size > c.budget {
			continue
		}
		c.by[k] = c.lru.PushFront(ci)
		o := ownerKey{tenantID, it.UserID}
		if c.owners[o] == nil {
			c.owners[o] = map[int64]struct{}{}
		}
		c.owners[o][it.ID] = struct{}{}
		c.used += ci.size
	}
	for c.used > c.budget {
		c.remove(c.lru.Back())
	}
}

// get returns the cached items of ids and the ids it does not hold.
func (c *itemCache) get(tenantID int64, ids []int64) (map[int64]store.ItemText, []int64) {
	got := make(map[int64]store.ItemText, len(ids))
	var missing []int64
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if e, ok := c.by[itemKey{tenantID, id}]; ok {
			c.lru.MoveToFront(e)
			got[id] = e.Value.(*cachedItem).it
		} else {
			missing = append(missing, id)
		}
	}
	return got, missing
}

// purge drops every cached item of the user, as the tenant log's purge
// event says; fills that read before it are refused.
func (c *itemCache) purge(tenantID, userID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epochs[tenantID]++
	o := ownerKey{tenantID, userID}
	for id := range c.owners[o] {
		c.remove(c.by[itemKey{tenantID, id}])
	}
	delete(c.owners, o)
}

// redact drops one cached item, as the tenant log's redaction event says;
// fills that read before it are refused, as after a purge.
func (c *itemCache) redact(tenantID, itemID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epochs[tenantID]++
	if e, ok := c.by[itemKey{tenantID, itemID}]; ok {
		c.remove(e)
	}
}

func (c *itemCache) remove(e *list.Element) {
	ci := c.lru.Remove(e).(*cachedItem)
	delete(c.by, itemKey{ci.tenant, ci.it.ID})
	o := ownerKey{ci.tenant, ci.it.UserID}
	if ids := c.owners[o]; ids != nil {
		delete(ids, ci.it.ID)
		if len(ids) == 0 {
			delete(c.owners, o)
		}
	}
	c.used -= ci.size
}

// frameItems reads the items of ids a frame may render, labels resolved
// now: cached texts (in the caught-up arena's tenant, see itemCache) with
// the labels the frame read up front, and from the store, in one round
// trip, only the items not cached and the labels not read. An id that no
// longer exists is left out. stored are items a capture beside the frame
// has stored and not committed: taken as they are, not looked up.
func (e *Engine) frameItems(ctx context.Context, tenantID int64, ids []int64, known store.Labels, stored []store.ItemText) (map[int64]store.RenderItem, error) {
	c := e.res.texts
	epoch := c.epoch(tenantID)
	cached, missing := c.get(tenantID, ids)
	for _, it := range stored {
		if i := slices.Index(missing, it.ID); i >= 0 {
			cached[it.ID] = it
			missing = slices.Delete(missing, i, i+1)
		}
	}
	labels := known
	var keys []store.LabelKey
	asked := map[store.LabelKey]bool{}
	for _, it := range cached {
		if key, _, ok := store.LabelOf(it); ok && !asked[key] {
			if _, known := labels.Resolve(key); !known {
				keys = append(keys, key)
				asked[key] = true
			}
		}
	}
	if len(missing) > 0 || len(keys) > 0 {
		got, err := e.store.ReadItemTexts(ctx, tenantID, missing, keys, known)
		if err != nil {
			return nil, err
		}
		c.put(tenantID, epoch, got.Items)
		for _, it := range got.Items {
			cached[it.ID] = it
		}
		if len(got.Labels) > 0 {
			by := make(map[store.LabelKey]string, len(known.By)+len(got.Labels))
			maps.Copy(by, known.By)
			maps.Copy(by, got.Labels)
			labels = store.Labels{Of: known.Of, By: by}
		}
	}
	out := make(map[int64]store.RenderItem, len(cached))
	for id, it := range cached {
		out[id] = it.Render(labelOf(it, labels))
	}
	return out, nil
}

// labelOf is the label the item renders with under labels: a fixed one
// (the assistant's), or its binding's latest value ("" when unbound or not
// among labels).
func labelOf(it store.ItemText, labels store.Labels) string {
	key, fixed, ok := store.LabelOf(it)
	if !ok {
		return fixed
	}
	v, _ := labels.Resolve(key)
	return v
}
