package ops

import (
	"context"
	"fmt"

	"github.com/perpetuity/perpetuity/memory/store"
)

// PurgeStore is what purging needs from the store.
type PurgeStore interface {
	UserByName(ctx context.Context, tenantID int64, name string) (int64, error)
	PurgeUser(ctx context.Context, tenantID, userID int64, by store.Actor) (store.PurgeReport, error)
}

// PurgeByName removes a memory user's whole memory (store.PurgeUser: one
// transaction, frequency counts decremented, a purge event every serving
// process applies before its next scan, an audit entry without content).
// The user is named as admins name it and never created by the lookup.
func PurgeByName(ctx context.Context, st PurgeStore, tenantID int64, name string, by store.Actor) (int64, store.PurgeReport, error) {
	id, err := st.UserByName(ctx, tenantID, name)
	if err != nil {
		return 0, store.PurgeReport{}, fmt.Errorf("purge: %w", err)
	}
	rep, err := st.PurgeUser(ctx, tenantID, id, by)
	return id, rep, err
}
