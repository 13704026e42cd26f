package app

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/chain"
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/memory/text"
)

// legacyDictionary is the version every tenant created before v3 became
// the default started on (the schema's first default). The engine makes
// sure it is loaded, so such a tenant serves even where no older binary's
// serve ever loaded it.
const legacyDictionary = 1

// newEngine builds the memory engine the way every command needs it: the
// embedded tokenizer loaded once, the default dictionary at hand and v1
// loaded into the database (buildEngine).
func newEngine(ctx context.Context, cfg Config, db *store.DB) (*memory.Engine, error) {
	return buildEngine(ctx, db, memory.Options{Ceiling: cfg.FrameCeiling})
}

// newServingEngine is newEngine for serve: a frame's reheats are written
// after the frame is handed to the proxy, off the request's path (the
// viewer's next frame waits for them), and a failed write is logged.
//
// It also builds the chain graph's writer, which the caller runs: captures
// kick it, frames read its edges.
func newServingEngine(ctx context.Context, cfg Config, db *store.DB, log *slog.Logger) (*memory.Engine, *chain.Writer, error) {
	lex, err := dict.Builtin(chain.LexiconVersion)
	if err != nil {
		return nil, nil, err
	}
	w := chain.NewWriter(db, lex, chain.Rules{}, func(err error) { log.Warn("chain graph catch-up failed", "err", err) })
	eng, err := buildEngine(ctx, db, memory.Options{Ceiling: cfg.FrameCeiling, DeferReheat: true,
		Errors: func(err error) { log.Warn("deferred write failed", "err", err) }, Chain: w, ArenaBudget: cfg.ArenaBudget})
	return eng, w, err
}

func buildEngine(ctx context.Context, db *store.DB, opts memory.Options) (*memory.Engine, error) {
	counter, err := text.NewCounter()
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	loaded, err := db.Dictionaries(ctx)
	if err != nil {
		return nil, err
	}
	has := func(v int) bool {
		return slices.ContainsFunc(loaded, func(d store.DictInfo) bool { return d.Version == v })
	}
	old, err := dict.Builtin(legacyDictionary)
	if err != nil {
		return nil, err
	}
	if !has(legacyDictionary) {
		if _, err := db.EnsureDictionary(ctx, old.Version, old.Name, old.Entries()); err != nil {
			return nil, err
		}
	}
	// The engine keeps v1 and, when the database holds it, the default at
	// hand, so neither waits for the store on a first capture. The default
	// is not loaded here when missing: that stays the dark upload of a
	// rollout, or the first tenant created on it. Any other version loads
	// from the database on first use.
	eng := memory.New(db, memory.TextAnalyzer{C: counter}, memory.DictTerms{D: old}, opts)
	if has(dict.Default) && dict.Default != legacyDictionary {
		d, err := dict.Builtin(dict.Default)
		if err != nil {
			return nil, err
		}
		if err := eng.Hold(d); err != nil {
			return nil, err
		}
	}
	return eng, nil
}
