package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// TestAdminResetLinkAndUnlock is issue 18, finding 2, on the command line:
// with no mail, the operator issues a reset link for any account (a
// platform admin's too) and clears an account's failed sign-ins; the link
// is printed, only its hash is stored, and both are audited.
func TestAdminResetLinkAndUnlock(t *testing.T) {
	t.Parallel()
	url := dbtest.New(t)
	vars := map[string]string{"DATABASE_URL": url, "PERPETUITY_PUBLIC_URL": "https://perpetuity.example"}
	admin := func(stdin string, args ...string) (string, string, error) {
		var out, errs bytes.Buffer
		e := env{getenv: func(k string) string { return vars[k] }, stdin: strings.NewReader(stdin), stdout: &out, stderr: &errs}
		err := run(context.Background(), e, append([]string{"admin"}, args...))
		return out.String(), errs.String(), err
	}
	if _, errs, err := admin("a long enough password\n", "create", "root@example.com"); err != nil {
		t.Fatalf("admin create: %v\n%s", err, errs)
	}
	out, errs, err := admin("", "reset-link", "Root@Example.com")
	if err != nil {
		t.Fatalf("reset-link: %v\n%s", err, errs)
	}
	link := strings.TrimSpace(out)
	token, ok := strings.CutPrefix(link, "https://perpetuity.example/reset/")
	if !ok || len(token) != 43 {
		t.Fatalf("reset-link printed %q", out)
	}
	if !strings.Contains(errs, "works once") {
		t.Errorf("reset-link does not say how the link works: %q", errs)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	hash := sha256.Sum256([]byte(token))
	var stored, plain, audited int
	if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE token_hash = $1), count(*) FILTER (WHERE strpos(encode(token_hash, 'escape'), $2) > 0)
		FROM console_password_resets`, hash[:], token).Scan(&stored, &plain); err != nil {
		t.Fatal(err)
	}
	if stored != 1 || plain != 0 {
		t.Errorf("reset links: %d stored by hash, %d in clear", stored, plain)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE tenant_id IS NULL AND action = 'account.reset_link'
		AND actor_email = 'cli' AND target = 'root@example.com' AND strpos(detail::text, $1) = 0`, token).Scan(&audited); err != nil || audited != 1 {
		t.Errorf("reset link audited %d times (%v)", audited, err)
	}
	if out, errs, err = admin("", "unlock", "root@example.com"); err != nil || !strings.Contains(out, "cleared 0 failed sign-ins") {
		t.Errorf("unlock: %v %q %q", err, out, errs)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE tenant_id IS NULL AND action = 'account.unlock' AND target = 'root@example.com'`).Scan(&audited); err != nil || audited != 1 {
		t.Errorf("unlock audited %d times (%v)", audited, err)
	}
	for _, args := range [][]string{{"reset-link", "nobody@example.com"}, {"unlock", "nobody@example.com"}} {
		if _, _, err := admin("", args...); err == nil || ExitCode(err) != 1 || !strings.Contains(err.Error(), "nobody@example.com") {
			t.Errorf("%v for an unknown address: %v", args, err)
		}
	}
}
