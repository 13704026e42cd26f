// Package ops holds the memory operations an admin runs (DESIGN §8):
// dictionary rollouts (upload dark, derive, flip, retire), the integrity
// check, and purging a memory user. The SQL is memory/store's; this package
// is the logic around it, shared by the command line and the console.
package ops

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/store"
)

// DeriveStore is what derivation needs from the store.
type DeriveStore interface {
	StartDerive(ctx context.Context, tenantID int64, version int, by store.Actor) (store.Rollout, error)
	ClaimDerive(ctx context.Context, tenantID int64, version int, l store.Lease) (store.Rollout, error)
	ReleaseDerive(ctx context.Context, tenantID int64, version int, l store.Lease) error
	ReadDeriveBatch(ctx context.Context, tenantID, after int64, limit int) ([]store.TokenItem, error)
	ReadUnderived(ctx context.Context, tenantID int64, version int, after int64, limit int) ([]store.TokenItem, error)
	WriteDerived(ctx context.Context, tenantID int64, version int, l store.Lease, rows []store.DerivedRow, upto int64) (store.Rollout, error)
	FinishDerive(ctx context.Context, tenantID int64, version int, l store.Lease) (store.Rollout, int64, error)
	LoadDictionary(ctx context.Context, version int) (*dict.Dictionary, error)
	ReadDenseRows(ctx context.Context, tenantID int64, version int, after int64, limit int) ([]store.DenseRow, error)
	WriteComponent(ctx context.Context, tenantID int64, version int, component []byte, rows int64) error
}

// Deriver re-derives a tenant's retrieval rows under a new dictionary
// version from the stored tokens, in batches of one transaction each. The
// rollout's cursor moves with every batch, so a worker that dies (killed,
// crashed, cancelled) leaves every committed batch in place and the next
// run resumes after it; rows and counts end the same either way. Heat,
// decay constants and novelty are never read or written.
type Deriver struct {
	St DeriveStore
	// Batch is how many items one transaction derives (default 500).
	Batch int
	// Lease is how long a silent worker keeps its claim (default 15s); a
	// killed worker's rollout can be resumed after it.
	Lease time.Duration
	// Owner names this worker in the rollout row (default host:pid:random).
	Owner string
	// Progress, when set, is told the rollout after every batch.
	Progress func(store.Rollout)

	mu    sync.Mutex
	dicts map[int]memory.DictTerms
}

// maxSweeps bounds the final passes over items without a row; only items
// stored without any retrieval row (not by capture) can need a second one.
const maxSweeps = 5

func (d *Deriver) lease() store.Lease {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.Owner == "" {
		host, _ := os.Hostname()
		d.Owner = fmt.Sprintf("%s:%d:%s", host, os.Getpid(), rand.Text()[:6])
	}
	ttl := d.Lease
	if ttl <= 0 {
		ttl = 15 * time.Second
	}
	return store.Lease{Owner: d.Owner, TTL: ttl}
}

func (d *Deriver) batch() int {
	if d.Batch <= 0 {
		return 500
	}
	return d.Batch
}

// dictionary loads a version with its shipped vectors, if any: rows derive
// their dense vector exactly as capture does.
func (d *Deriver) dictionary(ctx context.Context, version int) (memory.DictTerms, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if dd, ok := d.dicts[version]; ok {
		return dd, nil
	}
	lex, err := d.St.LoadDictionary(ctx, version)
	if err != nil {
		return memory.DictTerms{}, err
	}
	dd := memory.DictTerms{D: lex}
	if dict.HasBuiltinVectors(version) {
		if dd.V, err = dict.BuiltinVectors(version); err != nil {
			return memory.DictTerms{}, err
		}
	}
	if d.dicts == nil {
		d.dicts = map[int]memory.DictTerms{}
	}
	d.dicts[version] = dd
	return dd, nil
}

// Derive starts (or resumes) the tenant's rollout of version and runs it to
// ready. Another live worker on the same rollout is waited for: Derive
// returns once the rollout is ready, whoever finished it.
func (d *Deriver) Derive(ctx context.Context, tenantID int64, version int, by store.Actor) (store.Rollout, error) {
	r, err := d.St.StartDerive(ctx, tenantID, version, by)
	if err != nil {
		return r, err
	}
	d.report(r)
	if r.State == store.RolloutReady {
		return r, nil
	}
	dd, err := d.dictionary(ctx, version)
	if err != nil {
		return r, err
	}
	l := d.lease()
	for {
		r, err = d.St.ClaimDerive(ctx, tenantID, version, l)
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrLeaseHeld) {
			return r, err
		}
		wait := time.Second
		if r.LeaseUntil != nil {
			wait = min(max(time.Until(*r.LeaseUntil), 50*time.Millisecond), l.TTL)
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(wait):
		}
	}
	if r.State == store.RolloutReady {
		d.report(r)
		return r, nil
	}
	finished := false
	defer func() {
		if !finished {
			// A worker stopping on purpose hands the rollout on at once.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = d.St.ReleaseDerive(rctx, tenantID, version, l)
		}
	}()
	if r, err = d.pass(ctx, tenantID, dd, l, r); err != nil {
		return r, err
	}
	for sweep := 0; ; sweep++ {
		if r, err = d.sweep(ctx, tenantID, dd, l, r); err != nil {
			return r, err
		}
		if err := d.component(ctx, tenantID, dd); err != nil {
			return r, err
		}
		var missing int64
		r, missing, err = d.St.FinishDerive(ctx, tenantID, version, l)
		if err != nil {
			return r, err
		}
		if missing == 0 {
			finished = true
			d.report(r)
			return r, nil
		}
		if sweep == maxSweeps {
			return r, fmt.Errorf("derive v%d of tenant %d: %d items still lack rows after %d sweeps", version, tenantID, missing, maxSweeps)
		}
	}
}

func (d *Deriver) report(r store.Rollout) {
	if d.Progress != nil {
		d.Progress(r)
	}
}

// pass derives every item after the cursor, in id order.
func (d *Deriver) pass(ctx context.Context, tenantID int64, dd memory.DictTerms, l store.Lease, r store.Rollout) (store.Rollout, error) {
	after := r.DerivedUpto
	for {
		items, err := d.St.ReadDeriveBatch(ctx, tenantID, after, d.batch())
		if err != nil {
			return r, err
		}
		if len(items) == 0 {
			return r, nil
		}
		after = items[len(items)-1].ID
		if r, err = d.St.WriteDerived(ctx, tenantID, dd.D.Version, l, derive(dd, items), after); err != nil {
			return r, err
		}
		d.report(r)
		if len(items) < d.batch() {
			return r, nil
		}
	}
}

// sweep derives the items the pass could not see: ones that committed with
// a smaller id after the cursor had passed it, yet without rows for this
// version (capture writes them, so only rows-less inserts end up here).
func (d *Deriver) sweep(ctx context.Context, tenantID int64, dd memory.DictTerms, l store.Lease, r store.Rollout) (store.Rollout, error) {
	var after int64
	for {
		items, err := d.St.ReadUnderived(ctx, tenantID, dd.D.Version, after, d.batch())
		if err != nil {
			return r, err
		}
		if len(items) == 0 {
			return r, nil
		}
		after = items[len(items)-1].ID
		if r, err = d.St.WriteDerived(ctx, tenantID, dd.D.Version, l, derive(dd, items), 0); err != nil {
			return r, err
		}
	}
}

// derive computes each item's row exactly as capture does.
func derive(terms memory.DictTerms, items []store.TokenItem) []store.DerivedRow {
	out := make([]store.DerivedRow, len(items))
	for i, it := range items {
		out[i] = store.DerivedRow{ItemID: it.ID, Row: memory.DeriveRow(terms, it.Tokens)}
	}
	return out
}

// component freezes the tenant's common component of a version with
// vectors: the first principal component of every dense row derived so far,
// summed in item id order (dict.Moments), before the rollout is ready, so
// the arena that serves the version after the flip and every later capture
// remove the same direction.
func (d *Deriver) component(ctx context.Context, tenantID int64, dd memory.DictTerms) error {
	if dd.V == nil {
		return nil
	}
	m := dd.V.NewMoments()
	var after int64
	for {
		rows, err := d.St.ReadDenseRows(ctx, tenantID, dd.D.Version, after, 4*d.batch())
		if err != nil {
			return err
		}
		for _, r := range rows {
			x, err := dd.V.DecodeRaw(r.Dense)
			if err != nil {
				return fmt.Errorf("item %d: %w", r.ItemID, err)
			}
			m.Add(x)
		}
		if len(rows) < 4*d.batch() {
			break
		}
		after = rows[len(rows)-1].ItemID
	}
	return d.St.WriteComponent(ctx, tenantID, dd.D.Version, dict.EncodeComponent(m.Component(dd.V)), int64(m.N()))
}
