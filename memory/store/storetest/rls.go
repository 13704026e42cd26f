// Package storetest checks, against a real database, that row-level
// security keeps tenants apart (issue 9, item 5). memory/store's tests and
// the reliability figure (e2e/reliability/rls) run the same checks: the
// catalog (every tenant table has row-level security enabled and forced,
// with the tenant policy), the application role (it cannot bypass it) and
// the rows the application's pool sees with no tenant and with another one.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/store"
)

// TableRLS is what the catalog says of one tenant table.
type TableRLS struct {
	Table     string
	Enabled   bool // relrowsecurity
	Forced    bool // relforcerowsecurity: the owner is bound too
	Isolation bool // a tenant_isolation policy for the application role, on app_tenant()
}

// OK is whether the table is fully protected.
func (r TableRLS) OK() bool { return r.Enabled && r.Forced && r.Isolation }

// Every base table of the public schema with a tenant_id column, and
// tenants itself, with its row-level security state. A table a later
// migration adds appears here without anyone listing it.
const catalogSQL = `
SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,
       EXISTS (SELECT 1 FROM pg_policies p
               WHERE p.schemaname = 'public' AND p.tablename = c.relname AND p.policyname = 'tenant_isolation'
                 AND $1 = ANY (p.roles) AND p.cmd = 'ALL'
                 AND p.qual LIKE '%app_tenant()%' AND p.with_check LIKE '%app_tenant()%')
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind = 'r'
  AND (c.relname = 'tenants' OR EXISTS (
        SELECT 1 FROM information_schema.columns col
        WHERE col.table_schema = 'public' AND col.table_name = c.relname AND col.column_name = 'tenant_id'))
ORDER BY c.relname`

// Catalog reads the row-level security state of every tenant table.
func Catalog(ctx context.Context, owner *pgxpool.Pool) ([]TableRLS, error) {
	rows, err := owner.Query(ctx, catalogSQL, store.AppRole)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[TableRLS])
}

// Role is the role the application's pool acts as.
type Role struct {
	Name      string
	Super     bool
	BypassRLS bool
}

const roleSQL = `SELECT current_user::text, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user`

// AppRole reads the role of a connection of db's pool.
func AppRole(ctx context.Context, db *store.DB) (Role, error) {
	var r Role
	err := db.Pool.QueryRow(ctx, roleSQL).Scan(&r.Name, &r.Super, &r.BypassRLS)
	return r, err
}

// Seeded are the tenant tables Seed writes rows of: those of migrations
// 000001-000005, and arena_segments. The catalog check finds tables added later by itself;
// their isolation is checked too, but on rows only once Seed writes some.
var Seeded = []string{
	"activations", "api_keys", "arena_segments", "audit_log", "console_accounts", "console_invites", "console_sessions",
	"conversations", "corpus_stats", "dict_rollouts", "integrity_reports", "integrity_violations",
	"item_births", "items", "memory_users", "messages", "reheats", "requests", "retrieval_rows",
	"tenant_heads", "tenant_log", "tenants", "term_stats",
}

// Seed creates two tenants and writes, through the store as serving does,
// rows of each in every tenant table of migrations 000001-000005 (the
// console's tables through the application role in the tenant, as the
// console does). Tables added later are checked all the same, but hold rows
// only if Seed is taught to write them.
func Seed(ctx context.Context, db *store.DB, prefix string) (a, b store.NewTenant, err error) {
	if err := ensureDict(ctx, db); err != nil {
		return a, b, err
	}
	for i, p := range []*store.NewTenant{&a, &b} {
		if *p, err = seedTenant(ctx, db, prefix+"-"+strconv.Itoa(i)); err != nil {
			return a, b, err
		}
	}
	return a, b, nil
}

// seedDict is a one-word dictionary for the seeded rollouts: loading a
// shipped one takes seconds.
const (
	seedDictVersion = 9999
	seedDict        = "perpetuity-dictionary\t9999\tstoretest\n[terms]\nhello\n"
)

func ensureDict(ctx context.Context, db *store.DB) error {
	d, err := dict.Parse(strings.NewReader(seedDict))
	if err != nil {
		return err
	}
	_, err = db.EnsureDictionary(ctx, d.Version, d.Name, d.Entries())
	return err
}

const (
	seedAccountSQL = `INSERT INTO console_accounts (tenant_id, email, password_hash, role)
		VALUES ($1, $2, 'not-a-hash', 'tenant_admin') RETURNING id`
	seedInviteSQL = `INSERT INTO console_invites (tenant_id, email, role, token_hash, expires_at)
		VALUES ($1, $2, 'tenant_member', $3, now() + interval '1 day')`
	seedSessionSQL = `SELECT console_session_start(NULL, $1, $2, $3, 'csrf', 3600)`
)

func seedTenant(ctx context.Context, db *store.DB, name string) (store.NewTenant, error) {
	by := store.Actor{Email: "storetest"}
	nt, err := db.CreateTenantWith(ctx, name, "alice", store.TenantOptions{Dict: 1}) // tenants, tenant_heads, memory_users, api_keys
	if err != nil {
		return nt, err
	}
	conv, err := db.EnsureConversation(ctx, nt.TenantID, nt.UserID, "c1", "")
	if err != nil {
		return nt, err
	}
	// messages, items, retrieval_rows, stat_deltas, activations, item_births
	capture := func(fp string) (store.Captured, error) {
		got, err := db.Capture(ctx, store.Capture{TenantID: nt.TenantID, UserID: nt.UserID, ConversationID: conv,
			Role: "user", Fingerprint: []byte(fp), CreatedAt: time.Now(), ClockAdvance: 3,
			Items: []store.CaptureItem{{Body: "hello", Tokens: []string{"hello"}, TokenCount: 3, Tau: 1000, Novelty: 0.5,
				Rows: []store.RetrievalRow{{DictVersion: 1, TermIDs: []int32{1}, Freqs: []int16{1}, Length: 1}}}}})
		if err != nil {
			return got, fmt.Errorf("capture: %w", err)
		}
		return got, nil
	}
	got, err := capture("fp")
	if err != nil {
		return nt, err
	}
	if _, err := db.FoldStats(ctx, nt.TenantID); err != nil { // term_stats, corpus_stats
		return nt, err
	}
	if _, err := capture("fp2"); err != nil { // its counts stay in stat_deltas
		return nt, err
	}
	if err := db.ApplyReheats(ctx, nt.TenantID, nt.UserID, got.Clock+1, []store.Reheat{{ItemID: got.ItemIDs[0], Peak: 2}}); err != nil {
		return nt, fmt.Errorf("reheat: %w", err)
	}
	// requests, request_inspections, request_inspection_items
	if err := db.RecordRequest(ctx, store.RequestRecord{TenantID: nt.TenantID, RequestID: "r1", UserID: nt.UserID,
		Dialect: "openai", Provider: "openai", Status: 200, InspectRetention: time.Hour,
		Inspection: &store.Inspection{Question: "hello", Items: []store.InspectItem{{ID: got.ItemIDs[0], Shown: true}}}}); err != nil {
		return nt, err
	}
	gone, err := db.EnsureUser(ctx, nt.TenantID, "gone")
	if err != nil {
		return nt, err
	}
	if _, err := db.PurgeUser(ctx, nt.TenantID, gone, by); err != nil { // tenant_log, audit_log
		return nt, fmt.Errorf("purge: %w", err)
	}
	// arena_segments: after the purge, which a segment must not predate.
	cu, err := db.ReadCatchUp(ctx, nt.TenantID, 0, 0)
	if err != nil {
		return nt, err
	}
	if n, err := db.WriteSegments(ctx, nt.TenantID, cu.Head.DictVersion, cu.Head.Seq, store.CutSegments(cu.Items, 0, cu.Head.Seq, 1)); err != nil || n == 0 {
		return nt, errors.Join(fmt.Errorf("arena segments: %d written", n), err)
	}
	if _, err := db.StartDerive(ctx, nt.TenantID, seedDictVersion, by); err != nil { // dict_rollouts
		return nt, fmt.Errorf("start derive: %w", err)
	}
	rep, err := db.StartIntegrityReport(ctx, nt.TenantID, by) // integrity_reports
	if err != nil {
		return nt, err
	}
	item := got.ItemIDs[0]
	if err := db.FinishIntegrityReport(ctx, store.IntegrityReport{TenantID: nt.TenantID, ID: rep, Violations: 1,
		Counts: map[string]int64{"seeded": 1}}, []store.Violation{{Invariant: "seeded", ItemID: &item, Detail: "seeded"}}, by); err != nil {
		return nt, err // integrity_violations
	}
	err = db.InTenant(ctx, nt.TenantID, func(tx pgx.Tx) error {
		var account int64
		if err := tx.QueryRow(ctx, seedAccountSQL, nt.TenantID, name+"@example.com").Scan(&account); err != nil {
			return fmt.Errorf("account: %w", err)
		}
		if _, err := tx.Exec(ctx, seedInviteSQL, nt.TenantID, "invited-"+name+"@example.com", []byte("invite-"+name)); err != nil {
			return fmt.Errorf("invite: %w", err)
		}
		var started *bool
		if err := tx.QueryRow(ctx, seedSessionSQL, []byte("session-"+name), account, nt.TenantID).Scan(&started); err != nil || started == nil {
			return errors.Join(errors.New("session not started"), err)
		}
		return nil
	})
	return nt, err
}

// Seen is what one tenant table shows of the seeded tenants A and B.
type Seen struct {
	Table string
	// Rows of each tenant as the owner sees them (all of them).
	OwnerA, OwnerB int64
	// The application pool with no tenant set: every row of the table.
	NoTenant int64
	// The application pool acting for A: its own rows, and B's.
	AsA, BInA int64
}

// Isolated is whether the application saw exactly its own rows.
func (s Seen) Isolated() bool { return s.NoTenant == 0 && s.BInA == 0 && s.AsA == s.OwnerA }

// Visibility counts, for each table, what the owner and the application
// pool see of tenants a and b. Table names come from the catalog (Catalog),
// never from input.
func Visibility(ctx context.Context, db *store.DB, owner *pgxpool.Pool, tables []string, a, b int64) ([]Seen, error) {
	out := make([]Seen, 0, len(tables))
	for _, table := range tables {
		key := "tenant_id"
		if table == "tenants" {
			key = "id"
		}
		ident := pgx.Identifier{table}.Sanitize()
		all := `SELECT count(*) FROM ` + ident
		byTenant := all + ` WHERE ` + key + ` = $1`
		s := Seen{Table: table}
		if err := owner.QueryRow(ctx, byTenant, a).Scan(&s.OwnerA); err != nil {
			return nil, fmt.Errorf("%s: %w", table, err)
		}
		if err := owner.QueryRow(ctx, byTenant, b).Scan(&s.OwnerB); err != nil {
			return nil, fmt.Errorf("%s: %w", table, err)
		}
		if err := db.Pool.QueryRow(ctx, all).Scan(&s.NoTenant); err != nil {
			return nil, fmt.Errorf("%s: %w", table, err)
		}
		err := db.InTenant(ctx, a, func(tx pgx.Tx) error {
			if err := tx.QueryRow(ctx, all).Scan(&s.AsA); err != nil {
				return err
			}
			return tx.QueryRow(ctx, byTenant, b).Scan(&s.BInA)
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", table, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// CrossWrite is one attempt, acting for tenant A, to write tenant B's rows.
type CrossWrite struct {
	What string
	// Refused: the database raised an error (a row-level security
	// violation for inserts and moves); Rows: rows it changed otherwise.
	Refused bool
	Err     error
	Rows    int64
}

// Held is whether B's rows stayed out of A's reach.
func (c CrossWrite) Held() bool {
	if c.Refused {
		var pg *pgconn.PgError
		return errors.As(c.Err, &pg) && pg.Code == "42501" // insufficient_privilege: the policy's WITH CHECK
	}
	return c.Rows == 0
}

// Each statement names B as $1 (and A as $2 where it needs it).
var crossWrites = []struct {
	what, sql string
	needsA    bool
}{
	{"insert a memory user into B", `INSERT INTO memory_users (tenant_id, name) VALUES ($1, 'intruder')`, false},
	{"insert a request into B", `INSERT INTO requests (tenant_id, request_id, dialect, provider, status) VALUES ($1, 'x', 'openai', 'openai', 200)`, false},
	{"insert an audit entry into B", `INSERT INTO audit_log (tenant_id, action) VALUES ($1, 'intrusion')`, false},
	{"insert a platform audit entry", `INSERT INTO audit_log (tenant_id, action) SELECT NULL, 'intrusion' WHERE $1::bigint IS NOT NULL`, false},
	{"move A's conversations into B", `UPDATE conversations SET tenant_id = $1 WHERE tenant_id = $2`, true},
	{"update B's items", `UPDATE items SET body = 'defaced' WHERE tenant_id = $1`, false},
	{"delete B's items", `DELETE FROM items WHERE tenant_id = $1`, false},
	{"rename tenant B", `UPDATE tenants SET name = 'defaced' WHERE id = $1`, false},
}

// CrossWrites tries, acting for a, to write b's rows; each attempt runs in
// its own transaction, rolled back.
func CrossWrites(ctx context.Context, db *store.DB, a, b int64) []CrossWrite {
	errRollback := errors.New("roll back")
	out := make([]CrossWrite, 0, len(crossWrites))
	for _, w := range crossWrites {
		cw := CrossWrite{What: w.what}
		err := db.InTenant(ctx, a, func(tx pgx.Tx) error {
			args := []any{b}
			if w.needsA {
				args = append(args, a)
			}
			tag, err := tx.Exec(ctx, w.sql, args...)
			if err != nil {
				return err
			}
			cw.Rows = tag.RowsAffected()
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			cw.Refused, cw.Err = true, err
		}
		out = append(out, cw)
	}
	return out
}
