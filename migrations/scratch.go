package migrations

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoScratch wraps the server's refusal to create a scratch database
// (the role may not create databases): the caller then works in base.
var ErrNoScratch = errors.New("cannot create a scratch database")

// Scratch creates an empty database beside base's, named prefix and eight
// random hex digits, migrated up, and returns its URL and a function that
// drops it. The bench and `eval --pool` work in one: dropping a database is
// instant, where deleting a tenant of hundreds of thousands of items row by
// row is not, and the database they were given keeps nothing of theirs.
func Scratch(ctx context.Context, base, prefix string) (string, func(), error) {
	noop := func() {}
	u, err := url.Parse(base)
	if err != nil {
		return "", noop, fmt.Errorf("database URL: %w", err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := prefix + hex.EncodeToString(b)
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", noop, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", noop, fmt.Errorf("%w: %w", ErrNoScratch, err)
	}
	drop := func() {
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
	if err := Up(u.String()); err != nil {
		drop()
		return "", noop, fmt.Errorf("migrate scratch database: %w", err)
	}
	return u.String(), drop, nil
}
