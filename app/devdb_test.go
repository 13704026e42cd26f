package app

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestPrivateCluster exercises the third way `make run`/`make test` find a
// database: a private cluster started from the system's PostgreSQL binaries.
func TestPrivateCluster(t *testing.T) {
	t.Parallel()
	bin := postgresBinDir()
	if bin == "" {
		t.Fatal("no PostgreSQL binaries under /usr/lib/postgresql: make test installs postgresql where it can")
	}
	if reachable("127.0.0.1:54329") {
		t.Fatal("port 54329 is taken; a private cluster test needs it")
	}
	dir := t.TempDir()
	if os.Geteuid() == 0 {
		// initdb refuses root; the cluster belongs to "postgres", which must
		// be able to reach the directory.
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		// Parents only gain search permission: /tmp keeps its 1777.
		for p := filepath.Dir(dir); p != "/"; p = filepath.Dir(p) {
			if fi, err := os.Stat(p); err == nil {
				_ = os.Chmod(p, fi.Mode()|0o111)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var log bytes.Buffer
	pg := filepath.Join(dir, "data", "pg")
	url, err := privateCluster(ctx, bin, pg, &log)
	if err != nil {
		t.Fatalf("private cluster: %v\n%s", err, log.String())
	}
	t.Cleanup(func() {
		args := []string{"-D", pg, "-m", "immediate", "stop"}
		if os.Geteuid() == 0 {
			args = append([]string{"-u", "postgres", "--", filepath.Join(bin, "pg_ctl")}, args...)
			_ = exec.Command("runuser", args...).Run()
			return
		}
		_ = exec.Command(filepath.Join(bin, "pg_ctl"), args...).Run()
	})
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	defer conn.Close(ctx)
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("query: %v", err)
	}
	// A second call finds the running cluster instead of starting another.
	again, err := privateCluster(ctx, bin, pg, &log)
	if err != nil || again != url {
		t.Fatalf("second call: %q %v", again, err)
	}
}
