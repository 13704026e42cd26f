// Package dbtest gives each test its own PostgreSQL database, cloned from a
// migrated template so that a fresh schema costs one CREATE DATABASE.
//
// It finds the server through DATABASE_URL (set by `make test`), falling back
// to the local trust-auth server at 127.0.0.1:5432. A missing server is a
// test failure, never a skip.
package dbtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/migrations"
)

// AdminURL is the server-level URL tests connect to for creating databases.
func AdminURL() string {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// WithDatabase returns base with its database name replaced.
func WithDatabase(base, name string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("parse database url: %w", err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// New creates a fresh, fully migrated database for t and drops it when t ends.
func New(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := AdminURL()
	tmpl, err := ensureTemplate(ctx, admin)
	if err != nil {
		t.Fatalf("dbtest: template: %v", err)
	}
	name := "ptest_" + randomSuffix()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("dbtest: connect %s: %v (is PostgreSQL running? `make test` starts one)", redact(admin), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(727001)"); err != nil {
		t.Fatalf("dbtest: lock: %v", err)
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{tmpl}.Sanitize())
	_, _ = conn.Exec(ctx, "SELECT pg_advisory_unlock(727001)")
	if err != nil {
		t.Fatalf("dbtest: create database: %v", err)
	}
	t.Cleanup(func() { drop(admin, name) })
	u, err := WithDatabase(admin, name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func drop(admin, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

// ensureTemplate creates (once per schema) a migrated template database whose
// name carries a hash of the migration files, so a schema change makes a new one.
func ensureTemplate(ctx context.Context, admin string) (string, error) {
	sum, err := schemaHash()
	if err != nil {
		return "", err
	}
	name := "ptemplate_" + sum
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", fmt.Errorf("connect %s: %w (is PostgreSQL running? `make test` starts one)", redact(admin), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(727001)"); err != nil {
		return "", err
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock(727001)") //nolint:errcheck
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	// Templates of older schemas are of no further use.
	rows, err := conn.Query(ctx, "SELECT datname FROM pg_database WHERE datname LIKE 'ptemplate\\_%' AND datname NOT LIKE $1", name+"%")
	if err != nil {
		return "", err
	}
	stale, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", err
	}
	for _, s := range stale {
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{s}.Sanitize()+" WITH (FORCE)")
	}
	building := name + "_build"
	_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{building}.Sanitize()+" WITH (FORCE)")
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{building}.Sanitize()); err != nil {
		return "", err
	}
	u, err := WithDatabase(admin, building)
	if err != nil {
		return "", err
	}
	if err := migrations.Up(u); err != nil {
		return "", err
	}
	if err := loadDefaultDictionary(ctx, u); err != nil {
		return "", err
	}
	// Rename only when complete, so a crashed build is never used as template.
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{building}.Sanitize()+" RENAME TO "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	return name, nil
}

func schemaHash() (string, error) {
	h := sha256.New()
	var names []string
	err := fs.WalkDir(migrations.Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return err
	})
	if err != nil {
		return "", err
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := fs.ReadFile(migrations.Files, n)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(b))
		h.Write(b)
	}
	// The template holds the default dictionary too (loadDefaultDictionary);
	// shipped versions never change, so their number names them.
	fmt.Fprintf(h, "dictionary\x00%d\x00", dict.Default)
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// loadDefaultDictionary loads the shipped dictionary new tenants start on
// into the template, as the first tenant created in a database would
// (store.CreateTenantWith): loading it takes seconds, and nearly every
// test database gets a tenant. Tests of the load itself remove it first.
// The statements are store.EnsureDictionary's; dbtest cannot import store,
// whose own tests use dbtest.
func loadDefaultDictionary(ctx context.Context, url string) error {
	d, err := dict.Builtin(dict.Default)
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var rows [][]any
	for w, id := range d.Entries() {
		rows = append(rows, []any{int32(d.Version), w, int32(id)})
	}
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO dictionaries (version, name, entries) VALUES ($1, $2, $3)`, d.Version, d.Name, len(rows)); err != nil {
			return fmt.Errorf("default dictionary: %w", err)
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"dictionary_entries"}, []string{"version", "word", "term_id"}, pgx.CopyFromRows(rows)); err != nil {
			return fmt.Errorf("default dictionary: %w", err)
		}
		return nil
	})
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable DATABASE_URL)"
	}
	return u.Redacted()
}
