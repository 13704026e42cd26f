package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/guard"
	"github.com/perpetuity/perpetuity/memory/store"
)

// Dictionary versions at capture (DESIGN §8): while a tenant derives a new
// version, or keeps the previous one for a flip back, every message gets a
// retrieval row for each version the tenant keeps, not only the active one.

// versionStore is what a store offers when a tenant can keep several
// dictionary versions. Without it the engine writes and reads the one
// version it was built with.
type versionStore interface {
	CaptureVersions(ctx context.Context, tenantID int64) ([]int, error)
	LoadDictionary(ctx context.Context, version int) (*dict.Dictionary, error)
}

// maxCaptureAttempts bounds retries after the tenant's versions changed
// under a capture; each change is an admin's rollout step, so two in a row
// are rare and three would be a bug.
const maxCaptureAttempts = 3

// captureAllVersions derives c's rows for every version the tenant keeps
// and stores it. The store refuses, among the capture's statements, a
// capture whose versions went stale (a derivation started or a flip landed
// since they were read): the versions are then read again and the rows
// derived again.
func (e *Engine) captureAllVersions(ctx context.Context, c store.Capture) (store.Captured, error) {
	for attempt := 0; ; attempt++ {
		versions, err := e.vers.get(ctx, c.TenantID, attempt > 0)
		if err != nil {
			return store.Captured{}, fmt.Errorf("capture: %w", err)
		}
		for i := range c.Items {
			it := &c.Items[i]
			it.Rows = it.Rows[:0]
			for _, v := range versions {
				d, err := e.dictionary(ctx, v)
				if err != nil {
					return store.Captured{}, fmt.Errorf("capture: %w", err)
				}
				row := DeriveRow(d, it.Tokens)
				row.DictVersion = v
				it.Rows = append(it.Rows, row)
			}
		}
		got, err := e.store.Capture(ctx, c)
		if err != nil && store.IsDictVersionsChanged(err) && attempt < maxCaptureAttempts-1 {
			continue
		}
		return got, err
	}
}

// dictionary returns the dictionary of a version, loading it from the store
// the first time. A frame must query with the version its arena holds
// (resident.dict), never another.
func (e *Engine) dictionary(ctx context.Context, version int) (Dictionary, error) {
	return e.dicts.get(ctx, version)
}

// dictionaries holds the versions loaded so far. A version loads once; its
// waiters block on it alone, not on other versions.
type dictionaries struct {
	st   versionStore
	vecs *vectorCache
	mu   sync.Mutex
	by   map[int]*dictSlot
}

type dictSlot struct {
	ready chan struct{}
	d     Dictionary
	err   error
}

func newDictionaries(st versionStore, d Dictionary, vecs *vectorCache) *dictionaries {
	ready := make(chan struct{})
	close(ready)
	return &dictionaries{st: st, vecs: vecs, by: map[int]*dictSlot{d.Version(): {ready: ready, d: d}}}
}

// Hold gives the engine a dictionary version at hand from the start,
// besides the one New was given, so the first capture or frame under it
// does not wait for the store to load it (a capture has its own deadline).
// A shipped version gets its vectors as in New. A version held already is
// kept as it is.
func (e *Engine) Hold(d *dict.Dictionary) error {
	v, err := e.dicts.vecs.get(d.Version)
	if err != nil {
		return err
	}
	ready := make(chan struct{})
	close(ready)
	e.dicts.mu.Lock()
	defer e.dicts.mu.Unlock()
	if _, ok := e.dicts.by[d.Version]; !ok {
		e.dicts.by[d.Version] = &dictSlot{ready: ready, d: DictTerms{D: d, V: v}}
	}
	return nil
}

func (ds *dictionaries) get(ctx context.Context, version int) (Dictionary, error) {
	ds.mu.Lock()
	s := ds.by[version]
	if s != nil {
		ds.mu.Unlock()
	} else {
		if ds.st == nil {
			ds.mu.Unlock()
			return nil, fmt.Errorf("dictionary v%d: the engine's store cannot load dictionaries", version)
		}
		s = &dictSlot{ready: make(chan struct{})}
		ds.by[version] = s
		ds.mu.Unlock()
		// Loaded for every later caller, so one caller's cancellation must
		// not fail it for the others.
		// Guarded: a panic (the caller's goroutine may be one that
		// recovers) must still close ready and free the slot, or every
		// later caller would wait on it.
		var d *dict.Dictionary
		var v *dict.Vectors
		err := guard.Run(func() (err error) {
			if d, err = ds.st.LoadDictionary(context.WithoutCancel(ctx), version); err == nil {
				v, err = ds.vecs.get(version)
			}
			return err
		})
		if err != nil {
			s.err = err
			ds.mu.Lock()
			delete(ds.by, version) // the next caller tries again
			ds.mu.Unlock()
		} else {
			s.d = DictTerms{D: d, V: v}
		}
		close(s.ready)
	}
	select {
	case <-s.ready:
		return s.d, s.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// versionTTL is how long a tenant's capture versions are trusted without
// asking again. Staleness never costs correctness (the commit-time check
// catches a missing version); it only bounds how long rows are still
// written for a version that was retired.
const versionTTL = 5 * time.Second

// versionCache remembers each tenant's capture versions.
type versionCache struct {
	st  versionStore
	def []int
	mu  sync.Mutex
	by  map[int64]cachedVersions
}

type cachedVersions struct {
	vs []int
	at time.Time
}

func newVersionCache(st versionStore, def int) *versionCache {
	return &versionCache{st: st, def: []int{def}, by: map[int64]cachedVersions{}}
}

func (vc *versionCache) get(ctx context.Context, tenantID int64, refresh bool) ([]int, error) {
	if vc.st == nil {
		return vc.def, nil
	}
	vc.mu.Lock()
	c, ok := vc.by[tenantID]
	vc.mu.Unlock()
	if ok && !refresh && time.Since(c.at) < versionTTL {
		return c.vs, nil
	}
	vs, err := vc.st.CaptureVersions(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	vc.mu.Lock()
	vc.by[tenantID] = cachedVersions{vs: vs, at: time.Now()}
	vc.mu.Unlock()
	return vs, nil
}
