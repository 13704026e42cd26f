package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Usage is the console's usage page read from requests: tokens per memory
// user, per key and per UTC day since a moment, each with the memory's own
// tokens (the frame Perpetuity put in the prompt) apart from the harness's,
// and the share of requests the provider did not answer with a 2xx.

// UsageFigures are the sums over some requests.
type UsageFigures struct {
	Requests  int64
	Errors    int64 // status outside 200..299
	TokensIn  int64 // the provider's input tokens: the frame plus what the harness sent
	TokensOut int64
	Frame     int64 // input tokens of the frame, the memory's own
	Harness   int64 // input tokens the harness sent itself (input less the frame, never below 0)
}

// UsageByUser is one memory user's figures. UserID 0 gathers requests that
// named no user.
type UsageByUser struct {
	UserID int64
	User   string
	UsageFigures
}

// UsageByKey is one key's figures; KeyID 0 gathers requests recorded
// without a key (before keys were recorded, or whose key is gone).
type UsageByKey struct {
	KeyID  int64
	Name   string
	Prefix string
	User   string // the key's memory user
	UsageFigures
}

// UsageByDay is one UTC day's figures.
type UsageByDay struct {
	Day time.Time
	UsageFigures
}

// TenantUsage is everything the usage page shows.
type TenantUsage struct {
	Total UsageFigures
	Users []UsageByUser
	Keys  []UsageByKey
	Days  []UsageByDay
}

// The sums are spelled out in each query (no SQL is assembled at run time).
const (
	usageByUserSQL = `
SELECT coalesce(r.user_id, 0), coalesce(u.name, ''),
       count(*), count(*) FILTER (WHERE r.status NOT BETWEEN 200 AND 299),
       coalesce(sum(r.tokens_in), 0)::bigint, coalesce(sum(r.tokens_out), 0)::bigint,
       coalesce(sum(r.frame_tokens), 0)::bigint, coalesce(sum(greatest(r.tokens_in - r.frame_tokens, 0)), 0)::bigint
FROM requests r
LEFT JOIN memory_users u ON u.tenant_id = r.tenant_id AND u.id = r.user_id
WHERE r.tenant_id = $1 AND r.at >= $2
GROUP BY 1, 2
ORDER BY sum(r.tokens_in + r.tokens_out) DESC, 2, 1`
	usageByKeySQL = `
SELECT coalesce(r.key_id, 0), coalesce(k.name, ''), coalesce(k.prefix, ''), coalesce(u.name, ''),
       count(*), count(*) FILTER (WHERE r.status NOT BETWEEN 200 AND 299),
       coalesce(sum(r.tokens_in), 0)::bigint, coalesce(sum(r.tokens_out), 0)::bigint,
       coalesce(sum(r.frame_tokens), 0)::bigint, coalesce(sum(greatest(r.tokens_in - r.frame_tokens, 0)), 0)::bigint
FROM requests r
LEFT JOIN api_keys k ON k.tenant_id = r.tenant_id AND k.id = r.key_id
LEFT JOIN memory_users u ON u.tenant_id = k.tenant_id AND u.id = k.user_id
WHERE r.tenant_id = $1 AND r.at >= $2
GROUP BY 1, 2, 3, 4
ORDER BY sum(r.tokens_in + r.tokens_out) DESC, 2, 1`
	usageByDaySQL = `
SELECT (date_trunc('day', r.at AT TIME ZONE 'UTC'))::date,
       count(*), count(*) FILTER (WHERE r.status NOT BETWEEN 200 AND 299),
       coalesce(sum(r.tokens_in), 0)::bigint, coalesce(sum(r.tokens_out), 0)::bigint,
       coalesce(sum(r.frame_tokens), 0)::bigint, coalesce(sum(greatest(r.tokens_in - r.frame_tokens, 0)), 0)::bigint
FROM requests r
WHERE r.tenant_id = $1 AND r.at >= $2
GROUP BY 1
ORDER BY 1`
)

// Usage reads the tenant's usage since a moment, in one snapshot so that
// the per-user, per-key and per-day tables add up to the same total.
func (db *DB) Usage(ctx context.Context, tenantID int64, since time.Time) (TenantUsage, error) {
	var u TenantUsage
	err := db.InTenantRead(ctx, tenantID, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, usageByUserSQL, tenantID, since)
		if err != nil {
			return fmt.Errorf("usage by user: %w", err)
		}
		if u.Users, err = pgx.CollectRows(rows, scanUsageUser); err != nil {
			return fmt.Errorf("usage by user: %w", err)
		}
		if rows, err = tx.Query(ctx, usageByKeySQL, tenantID, since); err != nil {
			return fmt.Errorf("usage by key: %w", err)
		}
		if u.Keys, err = pgx.CollectRows(rows, scanUsageKey); err != nil {
			return fmt.Errorf("usage by key: %w", err)
		}
		if rows, err = tx.Query(ctx, usageByDaySQL, tenantID, since); err != nil {
			return fmt.Errorf("usage by day: %w", err)
		}
		if u.Days, err = pgx.CollectRows(rows, scanUsageDay); err != nil {
			return fmt.Errorf("usage by day: %w", err)
		}
		return nil
	})
	if err != nil {
		return TenantUsage{}, err
	}
	for _, d := range u.Days {
		u.Total.add(d.UsageFigures)
	}
	return u, nil
}

func (f *UsageFigures) add(o UsageFigures) {
	f.Requests += o.Requests
	f.Errors += o.Errors
	f.TokensIn += o.TokensIn
	f.TokensOut += o.TokensOut
	f.Frame += o.Frame
	f.Harness += o.Harness
}

func (f *UsageFigures) fields() []any {
	return []any{&f.Requests, &f.Errors, &f.TokensIn, &f.TokensOut, &f.Frame, &f.Harness}
}

func scanUsageUser(row pgx.CollectableRow) (UsageByUser, error) {
	var u UsageByUser
	err := row.Scan(append([]any{&u.UserID, &u.User}, u.fields()...)...)
	return u, err
}

func scanUsageKey(row pgx.CollectableRow) (UsageByKey, error) {
	var k UsageByKey
	err := row.Scan(append([]any{&k.KeyID, &k.Name, &k.Prefix, &k.User}, k.fields()...)...)
	return k, err
}

func scanUsageDay(row pgx.CollectableRow) (UsageByDay, error) {
	var d UsageByDay
	err := row.Scan(append([]any{&d.Day}, d.fields()...)...)
	return d, err
}
