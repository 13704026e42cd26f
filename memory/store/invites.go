package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	insertInviteSQL = `INSERT INTO console_invites (tenant_id, email, role, token_hash, invited_by, expires_at)
VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6)) RETURNING id`
	// The invitation page finds an invitation by its token before its
	// tenant is known: the token's hash is unique in the lookup, which stays
	// on the coordinator under Citus (migration 000020).
	insertInviteLookupSQL = `INSERT INTO invite_lookup (token_hash, tenant_id, invite_id) VALUES ($1, $2, $3)`
)

// Invite is a console invitation to record.
type Invite struct {
	TenantID  int64
	Email     string
	Role      string
	TokenHash []byte
	InvitedBy int64
	TTL       time.Duration
}

// RecordInvite writes an invitation and its lookup row in tx, the
// console's transaction in the invitation's tenant.
func RecordInvite(ctx context.Context, tx pgx.Tx, inv Invite) error {
	var id int64
	if err := tx.QueryRow(ctx, insertInviteSQL, inv.TenantID, inv.Email, inv.Role, inv.TokenHash, inv.InvitedBy, inv.TTL.Seconds()).Scan(&id); err != nil {
		return fmt.Errorf("insert invitation: %w", err)
	}
	if _, err := tx.Exec(ctx, insertInviteLookupSQL, inv.TokenHash, inv.TenantID, id); err != nil {
		return fmt.Errorf("insert invitation lookup: %w", err)
	}
	return nil
}
