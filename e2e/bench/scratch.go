package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/migrations"
)

// scratchDatabase creates an empty migrated database beside base's and
// returns its URL and a function that drops it: dropping a database is
// instant where deleting a million-item tenant is not, and the bench leaves
// nothing behind in the database it was given. When the role may not
// create databases the bench works in base itself.
func scratchDatabase(ctx context.Context, base string) (dbURL string, drop func(), scratch bool, note string, err error) {
	noop := func() {}
	u, err := url.Parse(base)
	if err != nil {
		return "", noop, false, "", fmt.Errorf("database URL: %w", err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "perpetuity_bench_" + hex.EncodeToString(b)
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", noop, false, "", fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, cerr := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); cerr != nil {
		if err := migrations.Up(base); err != nil {
			return "", noop, false, "", err
		}
		return base, noop, false, "scratch tenants in the given database (it may not create a database: " + cerr.Error() + ")", nil
	}
	drop = func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		c, err := pgx.Connect(dctx, base)
		if err != nil {
			return
		}
		defer c.Close(dctx)
		_, _ = c.Exec(dctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	}
	u.Path = "/" + name
	if err := migrations.Up(u.String()); err != nil {
		drop()
		return "", noop, false, "", fmt.Errorf("migrate scratch database: %w", err)
	}
	return u.String(), drop, true, "scratch database " + name + " (dropped afterwards)", nil
}
