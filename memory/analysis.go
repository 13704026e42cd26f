package memory

import (
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/text"
)

// TextAnalyzer is the production Analyzer: the embedded BPE counter, the
// normalizer, and scaffolding-aware chunking from memory/text.
type TextAnalyzer struct{ C *text.Counter }

func (a TextAnalyzer) Count(s string) int                     { return a.C.Count(s) }
func (a TextAnalyzer) Normalize(s string) []string            { return text.Normalize(s) }
func (a TextAnalyzer) Chunk(s string, maxTokens int) []string { return text.Chunk(s, maxTokens, a.C) }
func (a TextAnalyzer) ChunkContent(s string, chunks []string) []string {
	return text.ChunkContent(s, chunks)
}

// DictTerms adapts a versioned dictionary to the engine's Dictionary.
type DictTerms struct{ D *dict.Dictionary }

func (d DictTerms) Version() int { return d.D.Version }
func (d DictTerms) Terms(tokens []string) ([]uint32, []uint16, int) {
	return d.D.Terms(tokens)
}
func (d DictTerms) QueryTerms(tokens []string) []uint32 { return d.D.QueryTerms(tokens) }
