package ops

import (
	"context"
	"fmt"
	"sync"

	"github.com/perpetuity/perpetuity/memory/chain"
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/store"
)

// RedactStore is what redaction needs from the store.
type RedactStore interface {
	RedactItem(ctx context.Context, tenantID, itemID int64, by store.Actor, ownerEdges store.OwnerEdges) (store.RedactReport, error)
}

// Redactor removes single items (store.RedactItem) and rebuilds their
// owner's chain graph under the rules the serving writer and the
// integrity check apply, so the graph stays what a rebuild derives.
type Redactor struct {
	St RedactStore
	// Lexicon and Rules are the chain graph's (nil lexicon: the shipped
	// dict.Builtin(chain.LexiconVersion), parsed on first use).
	Lexicon chain.Lexicon
	Rules   chain.Rules

	once sync.Once
	lex  chain.Lexicon
	err  error
}

// Redact removes one item of the tenant for good: see store.RedactItem.
func (r *Redactor) Redact(ctx context.Context, tenantID, itemID int64, by store.Actor) (store.RedactReport, error) {
	lex, err := r.lexicon()
	if err != nil {
		return store.RedactReport{}, err
	}
	return r.St.RedactItem(ctx, tenantID, itemID, by, func(items []store.ChainItem) []store.ChainEdge {
		return chain.OwnerEdges(lex, r.Rules, items)
	})
}

func (r *Redactor) lexicon() (chain.Lexicon, error) {
	if r.Lexicon != nil {
		return r.Lexicon, nil
	}
	r.once.Do(func() {
		d, err := dict.Builtin(chain.LexiconVersion)
		if err != nil {
			r.err = fmt.Errorf("chain lexicon: %w", err)
			return
		}
		r.lex = d
	})
	return r.lex, r.err
}
