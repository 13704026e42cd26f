package store_test

import (
	"context"
	"crypto/rand"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/memory/store"
)

// consoleAccount inserts a tenant admin with a session, as the owner.
func consoleAccount(t *testing.T, db *store.DB, tenantID int64) (email string, accountID int64, session []byte) {
	t.Helper()
	ctx := context.Background()
	email = "acct-" + strings.ToLower(rand.Text()[:10]) + "@trust.test"
	session = []byte(rand.Text())
	owner := ownerOf(t, db)
	if err := owner.QueryRow(ctx, `INSERT INTO console_accounts (tenant_id, email, password_hash, role)
		VALUES ($1, $2, 'old', 'tenant_admin') RETURNING id`, tenantID, email).Scan(&accountID); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Exec(ctx, `INSERT INTO console_sessions (token_hash, account_id, tenant_id, csrf_token, expires_at)
		VALUES ($1, $2, $3, 'c', now() + interval '1 hour')`, session, accountID, tenantID); err != nil {
		t.Fatal(err)
	}
	return email, accountID, session
}

// TestRevealsAreTheirSessionsOnce: a reveal gives its sealed value to its
// own session and tenant once, then only what it is about; another
// session or tenant finds nothing; it goes with its session, even when
// the session is ended from a tenant transaction.
func TestRevealsAreTheirSessionsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	a, err := db.CreateTenant(ctx, "reveal-a", "u")
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.CreateTenant(ctx, "reveal-b", "u")
	if err != nil {
		t.Fatal(err)
	}
	_, accountID, sess := consoleAccount(t, db, a.TenantID)
	_, _, otherSess := consoleAccount(t, db, a.TenantID)
	id, err := db.PutReveal(ctx, a.TenantID, sess, store.RevealKey, map[string]string{"name": "laptop"}, []byte("sealed bytes"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		tenant  int64
		session []byte
		kind    string
	}{
		{"another session", a.TenantID, otherSess, store.RevealKey},
		{"another tenant", b.TenantID, sess, store.RevealKey},
		{"another kind", a.TenantID, sess, store.RevealReset},
	} {
		if _, err := db.TakeReveal(ctx, c.tenant, id, c.session, c.kind); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: %v, want not found", c.name, err)
		}
	}
	r, err := db.TakeReveal(ctx, a.TenantID, id, sess, store.RevealKey)
	if err != nil || string(r.Sealed) != "sealed bytes" || r.About["name"] != "laptop" {
		t.Fatalf("first take: %+v %v", r, err)
	}
	r, err = db.TakeReveal(ctx, a.TenantID, id, sess, store.RevealKey)
	if err != nil || r.Sealed != nil || r.About["name"] != "laptop" {
		t.Fatalf("second take: %+v %v", r, err)
	}
	// Expired reveals are not found, and the next one made sweeps them.
	old, err := db.PutReveal(ctx, a.TenantID, sess, store.RevealKey, nil, []byte("x"), time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if _, err := db.TakeReveal(ctx, a.TenantID, old, sess, store.RevealKey); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an expired reveal: %v", err)
	}
	// Ending the account's sessions in its tenant, as disabling it does.
	err = db.InTenant(ctx, a.TenantID, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM console_sessions WHERE account_id = $1`, accountID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var left int
	if err := ownerOf(t, db).QueryRow(ctx, `SELECT count(*) FROM console_reveals WHERE session_hash = $1`, sess).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d reveals outlived their session (%v)", left, err)
	}
}

// TestPasswordResetsWorkOnceForTheNewest: a link resets its account once,
// ends its sessions, voids the account's older links, writes both audit
// entries in the account's tenant, and is refused for a disabled account
// or an unknown address.
func TestPasswordResetsWorkOnceForTheNewest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	nt, err := db.CreateTenant(ctx, "resets", "u")
	if err != nil {
		t.Fatal(err)
	}
	email, accountID, _ := consoleAccount(t, db, nt.TenantID)
	by := store.Actor{Email: "root@trust.test", Address: "192.0.2.1"}
	if _, err := db.IssuePasswordReset(ctx, email, []byte("older"), time.Hour, by); err != nil {
		t.Fatal(err)
	}
	r, err := db.IssuePasswordReset(ctx, email, []byte("newer"), time.Hour, by)
	if err != nil || r.AccountID != accountID || r.TenantID != nt.TenantID {
		t.Fatalf("issue: %+v %v", r, err)
	}
	if _, err := db.PendingPasswordReset(ctx, []byte("older")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an older link after a newer one: %v", err)
	}
	if p, err := db.PendingPasswordReset(ctx, []byte("newer")); err != nil || p.Email != email {
		t.Fatalf("pending: %+v %v", p, err)
	}
	u, err := db.UsePasswordReset(ctx, []byte("newer"), "new hash", "198.51.100.9")
	if err != nil || u.AccountID != accountID || u.SessionsEnded != 1 {
		t.Fatalf("use: %+v %v", u, err)
	}
	if _, err := db.UsePasswordReset(ctx, []byte("newer"), "another", ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a used link again: %v", err)
	}
	entries, _, err := db.AuditLog(ctx, nt.TenantID, store.AuditFilter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range entries {
		got[e.Action] = e.Actor + " from " + e.Address
	}
	if got["account.reset_link"] != "root@trust.test from 192.0.2.1" || got["account.password_reset"] != email+" from 198.51.100.9" {
		t.Errorf("audit entries %v", got)
	}
	if _, err := ownerOf(t, db).Exec(ctx, `UPDATE console_accounts SET disabled_at = now() WHERE id = $1`, accountID); err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{email, "nobody@trust.test"} {
		if _, err := db.IssuePasswordReset(ctx, addr, []byte("t-"+addr), time.Hour, by); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a link for %s: %v", addr, err)
		}
	}
}

// TestAuditLogNamesWhatEntriesActOn: entries naming a memory user, a
// conversation, a dictionary, an integrity report or an item read with
// the name each has now; a name that is gone reads as the id.
func TestAuditLogNamesWhatEntriesActOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	nt, err := db.CreateTenant(ctx, "names", "alice")
	if err != nil {
		t.Fatal(err)
	}
	conv, err := db.EnsureConversation(ctx, nt.TenantID, nt.UserID, "k", "Plans")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.RenameUser(ctx, nt.TenantID, nt.UserID, "Alice A.", "test"); err != nil {
		t.Fatal(err)
	}
	targets := map[string]string{
		"memory_user:" + strconv.FormatInt(nt.UserID, 10): "Alice A. (alice)",
		"conversation:" + strconv.FormatInt(conv, 10):     "Plans",
		"integrity_report:7":                              "integrity report #7",
		"item:12":                                         "item #12",
		"memory_user:999999999":                           "",
		"plain words":                                     "",
	}
	err = db.InTenant(ctx, nt.TenantID, func(tx pgx.Tx) error {
		for target := range targets {
			if _, err := tx.Exec(ctx, `INSERT INTO audit_log (tenant_id, action, target) VALUES ($1, 'test.name', $2)`, nt.TenantID, target); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	entries, more, err := db.AuditLog(ctx, nt.TenantID, store.AuditFilter{Action: "test.name", Limit: 100})
	if err != nil || more || len(entries) != len(targets) {
		t.Fatalf("%d entries, more %v: %v", len(entries), more, err)
	}
	for _, e := range entries {
		if want := targets[e.Target]; e.TargetName != want {
			t.Errorf("%s reads %q, want %q", e.Target, e.TargetName, want)
		}
	}
}
