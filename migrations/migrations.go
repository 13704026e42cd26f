// Package migrations holds the schema as embedded SQL files and applies them
// with golang-migrate. Every step has a down file; migrations_test.go walks
// up, down to zero and up again on a real PostgreSQL.
package migrations

import (
	"database/sql"
	"embed"
	"errors"
	"fmt"

	"github.com/golang-migrate/migrate/v4"
	pgxmigrate "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
)

// Files holds the SQL migrations, embedded in the binary.
//
//go:embed *.sql
var Files embed.FS

// open builds a migrator over the embedded files for the given database URL.
func open(databaseURL string) (*migrate.Migrate, func(), error) {
	src, err := iofs.New(Files, ".")
	if err != nil {
		return nil, nil, fmt.Errorf("migrations source: %w", err)
	}
	db, err := sql.Open("pgx", databaseURL)
	if err != nil {
		return nil, nil, fmt.Errorf("open database: %w", err)
	}
	drv, err := pgxmigrate.WithInstance(db, &pgxmigrate.Config{MigrationsTable: "schema_migrations"})
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("migrations driver: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "pgx5", drv)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("migrator: %w", err)
	}
	return m, func() { m.Close() }, nil
}

// Up applies every pending migration.
func Up(databaseURL string) error {
	m, done, err := open(databaseURL)
	if err != nil {
		return err
	}
	defer done()
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrate up: %w", err)
	}
	return nil
}

// Down reverts steps migrations (all of them when steps <= 0).
func Down(databaseURL string, steps int) error {
	m, done, err := open(databaseURL)
	if err != nil {
		return err
	}
	defer done()
	if steps <= 0 {
		err = m.Down()
	} else {
		err = m.Steps(-steps)
	}
	if err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrate down: %w", err)
	}
	return nil
}

// Version reports the applied version and whether the last step failed halfway.
func Version(databaseURL string) (version uint, dirty bool, err error) {
	m, done, err := open(databaseURL)
	if err != nil {
		return 0, false, err
	}
	defer done()
	v, d, err := m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return 0, false, nil
	}
	return v, d, err
}

// Latest is the highest version among the embedded files.
func Latest() (uint, error) {
	src, err := iofs.New(Files, ".")
	if err != nil {
		return 0, err
	}
	defer src.Close()
	v, err := src.First()
	if err != nil {
		return 0, err
	}
	for {
		next, err := src.Next(v)
		if err != nil {
			return v, nil //nolint:nilerr // io.EOF-like end of the list
		}
		v = next
	}
}
