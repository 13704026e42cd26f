package rig

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Cluster is a PostgreSQL cluster of a test's own, initialised from the
// system's binaries into a temporary directory and listening on a free port
// of 127.0.0.1. A test that stops or crashes its database needs one: the
// shared server of `make test` carries every other test's databases.
type Cluster struct {
	Dir      string // data directory (the server log is server.log in it)
	Port     int
	bin      string   // /usr/lib/postgresql/N/bin
	runAs    string   // "postgres" when the test runs as root (initdb refuses root)
	settings []string // name=value, passed as -c at every start
}

// pgctlTimeout bounds one initdb or pg_ctl call; crash recovery after an
// immediate stop is part of a start.
const pgctlTimeout = 2 * time.Minute

// NewCluster initialises a cluster (trust authentication, superuser
// "postgres") without starting it. settings are server settings as
// name=value ("fsync=off"), applied at every Start. The cluster is stopped
// and its directory removed when t ends.
func NewCluster(t testing.TB, settings ...string) *Cluster {
	t.Helper()
	bin := postgresBin()
	if bin == "" {
		t.Fatal("rig: no PostgreSQL binaries under /usr/lib/postgresql/*/bin (Debian: apt-get install postgresql)")
	}
	for _, s := range settings {
		if name, _, ok := strings.Cut(s, "="); !ok || name == "" || strings.ContainsAny(s, " '\"") {
			t.Fatalf("rig: cluster setting %q is not name=value without spaces or quotes", s)
		}
	}
	c := &Cluster{bin: bin, settings: settings}
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			t.Fatal("rig: running as root and there is no 'postgres' system user to own a test cluster")
		}
		c.runAs = "postgres"
	}
	root, err := os.MkdirTemp("", "perpetuity-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.StopImmediate()
		_ = os.RemoveAll(root)
	})
	c.Dir = filepath.Join(root, "data")
	if c.runAs != "" {
		// MkdirTemp made root 0700 and root's own; the cluster's owner must
		// reach and fill it.
		if out, err := exec.Command("chown", c.runAs, root).CombinedOutput(); err != nil {
			t.Fatalf("rig: chown %s: %v\n%s", root, err, out)
		}
	}
	if c.Port, err = freePort(); err != nil {
		t.Fatal(err)
	}
	// -N: no fsync of the fresh files, which would cost seconds and protects
	// nothing a test keeps; the server itself runs with its settings.
	if out, err := c.pg("initdb", "-D", c.Dir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "-N"); err != nil {
		t.Fatalf("rig: initdb: %v\n%s", err, out)
	}
	return c
}

// URL is the connection URL of database db (e.g. "postgres").
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.Port, db)
}

// Start starts the server and waits until it accepts connections (after
// crash recovery when it was stopped immediately).
func (c *Cluster) Start() error {
	opts := []string{"-p", strconv.Itoa(c.Port), "-c", "listen_addresses=127.0.0.1", "-k", c.Dir}
	for _, s := range c.settings {
		opts = append(opts, "-c", s)
	}
	out, err := c.pg("pg_ctl", "-D", c.Dir, "-o", strings.Join(opts, " "), "-l", c.logPath(), "-w", "-t", "120", "start")
	if err != nil {
		return fmt.Errorf("start cluster: %w\n%s\n%s", err, out, c.Log())
	}
	return nil
}

// StopImmediate stops the server the way a crash would: every backend is
// killed at once, nothing is checkpointed, the next start recovers from the
// write-ahead log.
func (c *Cluster) StopImmediate() error { return c.stop("immediate") }

// Stop shuts the server down cleanly (fast mode: sessions are ended).
func (c *Cluster) Stop() error { return c.stop("fast") }

func (c *Cluster) stop(mode string) error {
	if _, err := os.Stat(filepath.Join(c.Dir, "postmaster.pid")); errors.Is(err, os.ErrNotExist) {
		return nil // not running
	}
	out, err := c.pg("pg_ctl", "-D", c.Dir, "-m", mode, "-w", "-t", "120", "stop")
	if err != nil {
		return fmt.Errorf("stop cluster (%s): %w\n%s", mode, err, out)
	}
	return nil
}

// Log is the server log so far.
func (c *Cluster) Log() string {
	b, _ := os.ReadFile(c.logPath())
	return string(b)
}

func (c *Cluster) logPath() string { return filepath.Join(c.Dir, "server.log") }

// pg runs one of the cluster's binaries, as the cluster's owner.
func (c *Cluster) pg(name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), pgctlTimeout)
	defer cancel()
	path := filepath.Join(c.bin, name)
	if c.runAs != "" {
		args = append([]string{"-u", c.runAs, "--", path}, args...)
		path = "runuser"
	}
	return exec.CommandContext(ctx, path, args...).CombinedOutput()
}

// postgresBin is the newest /usr/lib/postgresql/N/bin holding initdb.
func postgresBin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(d string) int {
		n, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		return n
	}
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d
		}
	}
	return ""
}

// freePort asks the kernel for a port nobody listens on. Another process
// could take it before the cluster binds it; the start would then fail
// loudly, not silently share a server.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
