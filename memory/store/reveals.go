package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Reveals (migration 15) hold a secret the console shows once, on the page
// its form redirects to. The store keeps it sealed, as the console sealed
// it for the session that made it (web/reveal.go); it never sees it in
// clear.

// Reveal kinds, as the table's check names them.
const (
	RevealWelcome = "welcome" // a new team's first key, on the welcome page
	RevealKey     = "key"     // a key made on the keys page
	RevealReset   = "reset"   // a password reset link a platform admin issued
	RevealInvite  = "invite"  // an invitation link, on the accounts page
)

// Reveal is a waiting secret. Sealed is nil once it has been shown.
type Reveal struct {
	ID     int64
	Kind   string
	About  map[string]string
	Sealed []byte
}

const (
	sweepRevealsSQL = `DELETE FROM console_reveals WHERE tenant_id = $1 AND expires_at < now()`
	putRevealSQL    = `INSERT INTO console_reveals (tenant_id, session_hash, kind, about, sealed, expires_at)
		VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6)) RETURNING id`
	// The first view takes the sealed value (r is the row before the
	// update); every later one finds the row without it.
	takeRevealSQL = `WITH r AS (
			SELECT id, sealed FROM console_reveals
			WHERE tenant_id = $1 AND id = $2 AND session_hash = $3 AND kind = $4 AND expires_at > now()
			FOR UPDATE)
		UPDATE console_reveals c SET sealed = NULL, shown_at = coalesce(c.shown_at, now())
		FROM r WHERE c.tenant_id = $1 AND c.id = r.id
		RETURNING r.sealed, c.about`
)

// PutReveal stores a sealed secret for the session with this token hash,
// for ttl, and forgets the tenant's expired ones.
func (db *DB) PutReveal(ctx context.Context, tenantID int64, sessionHash []byte, kind string, about map[string]string, sealed []byte, ttl time.Duration) (int64, error) {
	if about == nil {
		about = map[string]string{}
	}
	a, err := json.Marshal(about)
	if err != nil {
		return 0, fmt.Errorf("reveal: %w", err)
	}
	var id int64
	err = db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sweepRevealsSQL, tenantID); err != nil {
			return err
		}
		return tx.QueryRow(ctx, putRevealSQL, tenantID, sessionHash, kind, a, sealed, ttl.Seconds()).Scan(&id)
	})
	if err != nil {
		return 0, fmt.Errorf("put reveal: %w", err)
	}
	return id, nil
}

// TakeReveal returns the reveal of this session, kind and id with its
// sealed secret the first time, without it ever after; ErrNotFound when
// there is none (another session's, expired, never made).
func (db *DB) TakeReveal(ctx context.Context, tenantID, id int64, sessionHash []byte, kind string) (Reveal, error) {
	r := Reveal{ID: id, Kind: kind}
	var about []byte
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, takeRevealSQL, tenantID, id, sessionHash, kind).Scan(&r.Sealed, &about)
	})
	if err != nil {
		return Reveal{}, notFound(err)
	}
	if err := json.Unmarshal(about, &r.About); err != nil {
		return Reveal{}, fmt.Errorf("reveal %d: %w", id, err)
	}
	return r, nil
}
