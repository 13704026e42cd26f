package bench

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/perpetuity/perpetuity/memory/arena"
	"github.com/perpetuity/perpetuity/memory/arena/synth"
	"github.com/perpetuity/perpetuity/memory/dict"
)

// Vocabulary turns the synthetic corpus's term ids into text the real
// analyzer reads back to the same terms: synthetic term r is the
// dictionary's term r+1, and a user's synthetic name is an unknown word,
// which the dictionary hashes. Bodies, stored tokens and retrieval rows are
// therefore exactly what a capture of that text would store, and a
// question built from an item's words finds it through the real pipeline.
type Vocabulary struct {
	words []string // synthetic term id -> word
	dict  *dict.Dictionary
}

// SynthVocab is how many dictionary terms the synthetic corpus draws from.
const SynthVocab = 50_000

// NewVocabulary maps the first SynthVocab term ids of d to words.
func NewVocabulary(d *dict.Dictionary) (*Vocabulary, error) {
	if d.KnownTerms() < SynthVocab {
		return nil, fmt.Errorf("dictionary v%d has %d terms, the synthetic corpus needs %d", d.Version, d.KnownTerms(), SynthVocab)
	}
	words := make([]string, SynthVocab)
	for w, id := range d.Entries() {
		r := int(id) - 1
		if id == dict.NoTerm || r >= SynthVocab {
			continue
		}
		// Forms share their lemma's id; keep the smallest word so the
		// mapping does not depend on map order.
		if words[r] == "" || w < words[r] {
			words[r] = w
		}
	}
	for r, w := range words {
		if w == "" {
			return nil, fmt.Errorf("dictionary v%d: no word for term %d", d.Version, r+1)
		}
	}
	return &Vocabulary{words: words, dict: d}, nil
}

// Word is the text of one synthetic term.
func (v *Vocabulary) Word(t arena.TermID) string {
	if t >= synth.NameBase {
		n := int(t - synth.NameBase)
		// Letters and digits: one token, unknown to any dictionary.
		return "zq" + strconv.Itoa(n/64) + "x" + strconv.Itoa(n%64)
	}
	return v.words[t]
}

// Tokens are the stored tokens of a synthetic item: each term as often as
// its frequency, in an order shuffled by the item's id so the text does not
// read as a sorted list.
func (v *Vocabulary) Tokens(it *arena.Item) []string {
	var out []string
	for i, t := range it.Terms {
		f := 1
		if i < len(it.Freqs) && it.Freqs[i] > 0 {
			f = int(it.Freqs[i])
		}
		for range f {
			out = append(out, v.Word(t))
		}
	}
	s := uint64(it.ID)*0x9E3779B97F4A7C15 + 1
	for i := len(out) - 1; i > 0; i-- {
		s ^= s << 13
		s ^= s >> 7
		s ^= s << 17
		j := int(s % uint64(i+1))
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// Text is the body of an item with these tokens.
func Text(tokens []string) string { return strings.Join(tokens, " ") + "." }

// Question renders a synthetic query as the live question of a request.
func (v *Vocabulary) Question(q arena.Query) string {
	ws := make([]string, len(q.Terms))
	for i, t := range q.Terms {
		ws[i] = v.Word(t)
	}
	return "What about " + strings.Join(ws, " ") + "?"
}

// Row is the retrieval row the active dictionary derives from tokens.
func (v *Vocabulary) Row(tokens []string) (ids []int32, freqs []int16, length int) {
	tid, tf, n := v.dict.Terms(tokens)
	ids, freqs = make([]int32, len(tid)), make([]int16, len(tf))
	for i, t := range tid {
		ids[i] = int32(t)
	}
	for i, f := range tf {
		freqs[i] = int16(min(f, 32767))
	}
	return ids, freqs, n
}
