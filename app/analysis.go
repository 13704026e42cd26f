package app

import (
	"strings"
	"unicode"
)

// TEMPORARY until memory/text and memory/dict land (this session).
type simpleAnalysis struct{}

func (simpleAnalysis) Count(s string) int { return (len(s) + 3) / 4 }
func (simpleAnalysis) Normalize(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}
func (simpleAnalysis) Chunk(s string, _ int) []string { return []string{s} }

type simpleDict struct{}

func (simpleDict) Version() int                                    { return 1 }
func (simpleDict) Terms(tokens []string) ([]uint32, []uint16, int) { return nil, nil, len(tokens) }

func newAnalysis() (simpleAnalysis, simpleDict, error) { return simpleAnalysis{}, simpleDict{}, nil }

func (simpleDict) QueryTerms(tokens []string) []uint32 { return nil }
