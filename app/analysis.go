package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/memory/text"
)

// activeDictionary is the dictionary version serving uses until rollouts
// (issue 7) make it per tenant.
const activeDictionary = 1

// newEngine builds the memory engine the way every command needs it: the
// embedded tokenizer loaded once, the shipped dictionary loaded into the
// database with its version.
func newEngine(ctx context.Context, cfg Config, db *store.DB) (*memory.Engine, error) {
	return buildEngine(ctx, db, memory.Options{Ceiling: cfg.FrameCeiling})
}

// newServingEngine is newEngine for serve: a frame's reheats are written
// after the frame is handed to the proxy, off the request's path (the
// viewer's next frame waits for them), and a failed write is logged.
func newServingEngine(ctx context.Context, cfg Config, db *store.DB, log *slog.Logger) (*memory.Engine, error) {
	return buildEngine(ctx, db, memory.Options{Ceiling: cfg.FrameCeiling, DeferReheat: true,
		Errors: func(err error) { log.Warn("deferred reheat failed", "err", err) }})
}

func buildEngine(ctx context.Context, db *store.DB, opts memory.Options) (*memory.Engine, error) {
	counter, err := text.NewCounter()
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	d, err := dict.Builtin(activeDictionary)
	if err != nil {
		return nil, err
	}
	if _, err := db.EnsureDictionary(ctx, d.Version, d.Name, d.Entries()); err != nil {
		return nil, err
	}
	return memory.New(db, memory.TextAnalyzer{C: counter}, memory.DictTerms{D: d}, opts), nil
}
