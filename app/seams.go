package app

import (
	"context"
	"io"
	"strings"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/store"
)

// The seams below are what cmd/perpetuity-bench (e2e/lab) borrows from the
// server: it runs the real server and engine in-process, so it must build
// them as serve does, yet this package may not import it (the server would
// link the benchmarks, the eval corpus and the fake provider again).

// DatabaseURL is DATABASE_URL, or a development PostgreSQL found or started
// under PERPETUITY_DATA_DIR as `perpetuity devdb` does (its log to stderr).
func DatabaseURL(ctx context.Context, getenv func(string) string, stderr io.Writer) (string, error) {
	return databaseURL(ctx, env{getenv: getenv, stdin: strings.NewReader(""), stdout: stderr, stderr: stderr})
}

// Serve is `perpetuity serve` with cfg, logging to log, until ctx ends;
// ready, when set, is told the bound address (cfg.Addr may be port 0).
func Serve(ctx context.Context, cfg Config, log io.Writer, ready func(addr string)) error {
	none := func(string) string { return "" }
	return serve(ctx, env{getenv: none, stdin: strings.NewReader(""), stdout: log, stderr: log}, cfg, ready)
}

// BuildEngine is the memory engine every command builds: the embedded
// tokenizer, the default dictionary and the legacy one loaded.
func BuildEngine(ctx context.Context, db *store.DB, opts memory.Options) (*memory.Engine, error) {
	return buildEngine(ctx, db, opts)
}

// CLIActor is who the command line acts as in the audit trail.
func CLIActor() store.Actor { return cliActor() }

// ProgressOut is where a long command's progress line goes (progressOut).
func ProgressOut(w io.Writer) io.Writer { return progressOut(w) }
