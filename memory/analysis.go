package memory

import (
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/text"
)

// TextAnalyzer is the production Analyzer: the embedded BPE counter, the
// normalizer, and scaffolding-aware chunking from memory/text.
type TextAnalyzer struct{ C *text.Counter }

func (a TextAnalyzer) Count(s string) int          { return a.C.Count(s) }
func (a TextAnalyzer) Normalize(s string) []string { return text.Normalize(s) }
func (a TextAnalyzer) Chunk(s string, maxTokens int) ([]string, []int) {
	return text.ChunkCounted(s, maxTokens, a.C)
}

// CountAround counts pre + mid + post from mid's stored count n, counting
// only around the seams (the frame's render, memory/render.go).
func (a TextAnalyzer) CountAround(pre, mid string, n int, post string) (int, bool) {
	return a.C.CountAround(pre, mid, n, post)
}

func (a TextAnalyzer) ChunkContent(s string, chunks []string) []string {
	return text.ChunkContent(s, chunks)
}

// DictTerms adapts a versioned dictionary to the engine's Dictionary. V,
// the version's word vectors when it ships them, gives its rows a dense
// vector.
type DictTerms struct {
	D *dict.Dictionary
	V *dict.Vectors
}

// RawDense is the row's raw SIF vector; nil without vectors.
func (d DictTerms) RawDense(tokens []string) []byte {
	if d.V == nil {
		return nil
	}
	return d.V.RawDense(tokens)
}

func (d DictTerms) Version() int { return d.D.Version }
func (d DictTerms) Terms(tokens []string) ([]uint32, []uint16, int) {
	return d.D.Terms(tokens)
}
func (d DictTerms) QueryTerms(tokens []string) []uint32 { return d.D.QueryTerms(tokens) }
