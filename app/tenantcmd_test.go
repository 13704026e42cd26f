package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// TestTenantCreateScope: `tenant create` pins the first key to the first
// memory user unless --scope tenant says otherwise, prints which in both
// forms, and refuses a scope it does not know as a usage mistake.
func TestTenantCreateScope(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"DATABASE_URL": dbtest.New(t)}
	run := func(args ...string) (string, error) {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), testEnv(vars, &stdout, &stderr), args)
		return stdout.String() + stderr.String(), err
	}
	for _, tc := range []struct {
		flags []string
		want  store.KeyScope
	}{{nil, store.ScopeUser}, {[]string{"--scope", "user"}, store.ScopeUser}, {[]string{"--scope", "tenant"}, store.ScopeTenant}} {
		out, err := run(append(append([]string{"tenant", "create", "--json", "--user", "alice"}, tc.flags...), "acme")...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", tc.flags, err, out)
		}
		var nt struct {
			Key   string `json:"key"`
			Scope string `json:"scope"`
		}
		if err := json.Unmarshal([]byte(out), &nt); err != nil || nt.Scope != string(tc.want) {
			t.Fatalf("%v: scope %q (%v) in %s, want %q", tc.flags, nt.Scope, err, out, tc.want)
		}
		db, err := store.Open(context.Background(), vars["DATABASE_URL"])
		if err != nil {
			t.Fatal(err)
		}
		k, err := db.ResolveKey(context.Background(), nt.Key)
		db.Close()
		if err != nil || k.Scope != tc.want {
			t.Fatalf("%v: the key resolves with scope %q (%v)", tc.flags, k.Scope, err)
		}
	}
	out, err := run("tenant", "create", "--user", "alice", "acme")
	if err != nil || !strings.Contains(out, `Key scope: pinned to memory user "alice"`) {
		t.Errorf("text form does not say the key is pinned: %v\n%s", err, out)
	}
	out, err = run("tenant", "create", "--scope", "tenant", "acme")
	if err != nil || !strings.Contains(out, "Key scope: tenant-wide") {
		t.Errorf("text form does not say the key is tenant-wide: %v\n%s", err, out)
	}
	var ue UsageError
	if _, err := run("tenant", "create", "--scope", "everyone", "acme"); !errors.As(err, &ue) || !strings.Contains(err.Error(), "everyone") {
		t.Errorf("--scope everyone: %v, want a usage error naming it", err)
	}
}
