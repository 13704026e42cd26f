package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/store"
)

// sweepEvery is how often serve prunes every tenant's expired inspector
// records. A request prunes its own tenant (at most once a minute); a tenant
// that sends none would keep its records, questions and replies quoted in
// them, past the retention for as long as it stays quiet.
const sweepEvery = 10 * time.Minute

// inspectionPruner is what the sweep needs of the store.
type inspectionPruner interface {
	Tenants(ctx context.Context) ([]store.TenantRef, error)
	PruneInspections(ctx context.Context, tenantID int64, retention time.Duration) (int64, error)
}

// sweepInspections prunes the tenants this replica owns every sweepEvery
// until ctx ends; the first sweep runs at once, so a server that was down
// longer than the retention catches up at start.
func sweepInspections(ctx context.Context, st inspectionPruner, shard memory.Shard, retention time.Duration, log *slog.Logger) {
	tick := time.NewTicker(sweepEvery)
	defer tick.Stop()
	for {
		if n, err := sweepOnce(ctx, st, shard, retention); err != nil && ctx.Err() == nil {
			log.Error("inspector sweep", "err", err, "pruned", n)
		} else if n > 0 {
			log.Info("inspector sweep", "pruned", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sweepOnce prunes each owned tenant in turn; a failing tenant does not
// stop the others, and the first error is returned after all were tried.
func sweepOnce(ctx context.Context, st inspectionPruner, shard memory.Shard, retention time.Duration) (int64, error) {
	tenants, err := st.Tenants(ctx)
	if err != nil {
		return 0, err
	}
	var pruned int64
	var first error
	for _, t := range tenants {
		if !shard.Owns(t.ID) {
			continue // its own replica sweeps it
		}
		n, err := st.PruneInspections(ctx, t.ID, retention)
		pruned += n
		if err != nil && first == nil {
			first = err
		}
		if ctx.Err() != nil {
			return pruned, ctx.Err()
		}
	}
	return pruned, first
}
