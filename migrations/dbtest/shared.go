package dbtest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// shared is the one database of a test binary (a package), made by RunMain.
// Test helpers may hold state; product code may not.
var shared struct {
	once sync.Once
	url  string
	name string
	err  error
}

// RunMain runs a package's tests around one shared database, created on
// first use by Shared and dropped afterwards. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(dbtest.RunMain(m)) }
func RunMain(m *testing.M) int {
	code := m.Run()
	if shared.name != "" {
		drop(AdminURL(), shared.name)
	}
	return code
}

// Shared returns the package's database. Tests that share it keep apart by
// working in tenants of their own.
func Shared(t testing.TB) string {
	t.Helper()
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		admin := AdminURL()
		tmpl, err := ensureTemplate(ctx, admin)
		if err != nil {
			shared.err = err
			return
		}
		name := fmt.Sprintf("ptest_pkg_%d_%s", os.Getpid(), randomSuffix())
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			shared.err = err
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(727001)"); err != nil {
			shared.err = err
			return
		}
		_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{tmpl}.Sanitize())
		_, _ = conn.Exec(ctx, "SELECT pg_advisory_unlock(727001)")
		if err != nil {
			shared.err = err
			return
		}
		shared.name = name
		shared.url, shared.err = WithDatabase(admin, name)
	})
	if shared.err != nil {
		t.Fatalf("dbtest: shared database: %v", shared.err)
	}
	return shared.url
}
