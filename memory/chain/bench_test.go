package chain_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/perpetuity/perpetuity/memory/chain"
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/store"
)

// BenchmarkGraphAddWide: the rules' cost per item for a wide turn (200
// words drawn from a 20k vocabulary) on an owner of 5000 Zipf-distributed
// turns, the shape of the wide-question reliability test.
func BenchmarkGraphAddWide(b *testing.B) {
	lex, err := dict.Builtin(chain.LexiconVersion)
	if err != nil {
		b.Fatal(err)
	}
	vocab := make([]string, 20_000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("zq%05dx", i)
	}
	r := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(rand.New(rand.NewPCG(3, 4)), 1.07, 1, uint64(len(vocab)-1))
	g := chain.NewGraph(lex, chain.Rules{})
	id := int64(0)
	for i := 0; i < 5000; i++ {
		toks := make([]string, 30)
		for j := range toks {
			toks[j] = vocab[z.Uint64()]
		}
		id++
		g.Add(store.ChainItem{ID: id, Seq: id, UserID: 1, ConvID: int64(i / 20), Tokens: toks, TokenCount: 40})
	}
	wide := make([][]string, 64)
	for i := range wide {
		wide[i] = make([]string, 200)
		for j := range wide[i] {
			wide[i][j] = vocab[r.IntN(len(vocab))]
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id++
		g.Add(store.ChainItem{ID: id, Seq: id, UserID: 1, ConvID: 999999, Tokens: wide[i%len(wide)], TokenCount: 300})
	}
}
