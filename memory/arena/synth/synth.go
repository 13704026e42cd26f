// Package synth generates deterministic synthetic tenants for tests and
// benchmarks of the arena: chat turns with lognormal lengths over a Zipfian
// vocabulary, a few user-specific unknown words (names) with large term ids,
// conversations per user, and queries built around a stored turn the way a
// real follow-up question reuses some of its words.
package synth

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/perpetuity/perpetuity/memory/arena"
)

// Config describes a corpus. Zero fields take the defaults.
type Config struct {
	Seed      uint64
	Items     int
	Users     int     // default 10
	Vocab     int     // dictionary terms, default 50000
	Zipf      float64 // vocabulary exponent, default 1.07
	MedianLen float64 // median turn length in tokens, default 18
	SigmaLen  float64 // lognormal sigma of the length, default 0.8
	MaxLen    int     // default 400
	NameRate  float64 // share of tokens that are user-specific names, default 0.02
	ConvLen   int     // mean turns per conversation, default 120
}

func (c Config) withDefaults() Config {
	if c.Users <= 0 {
		c.Users = 10
	}
	if c.Vocab <= 0 {
		c.Vocab = 50000
	}
	if c.Zipf <= 0 {
		c.Zipf = 1.07
	}
	if c.MedianLen <= 0 {
		c.MedianLen = 18
	}
	if c.SigmaLen <= 0 {
		c.SigmaLen = 0.8
	}
	if c.MaxLen <= 0 {
		c.MaxLen = 400
	}
	if c.NameRate < 0 {
		c.NameRate = 0
	} else if c.NameRate == 0 {
		c.NameRate = 0.02
	}
	if c.ConvLen <= 0 {
		c.ConvLen = 120
	}
	return c
}

// NameBase is the first term id of unknown words; dictionary ids stay below.
const NameBase = 1 << 30

// namesPerUser is the pool of unknown words each user's turns draw from.
const namesPerUser = 64

// Generator draws terms and lengths; it is deterministic for a seed.
type Generator struct {
	cfg   Config
	rng   *rand.Rand
	zipf  alias
	ranks []arena.TermID // rank -> term id: dictionary ids are not frequency-ordered
}

// New prepares a generator for cfg.
func New(cfg Config) *Generator {
	cfg = cfg.withDefaults()
	g := &Generator{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5eed))}
	w := make([]float64, cfg.Vocab)
	for r := range w {
		w[r] = math.Pow(float64(r+1), -cfg.Zipf)
	}
	g.zipf = newAlias(w)
	g.ranks = make([]arena.TermID, cfg.Vocab)
	for r := range g.ranks {
		g.ranks[r] = arena.TermID(r)
	}
	g.rng.Shuffle(len(g.ranks), func(i, j int) { g.ranks[i], g.ranks[j] = g.ranks[j], g.ranks[i] })
	return g
}

// Term draws one dictionary term by Zipf's law.
func (g *Generator) Term() arena.TermID { return g.ranks[g.zipf.draw(g.rng)] }

// TermOfRank is the term id of the r-th most frequent dictionary term.
func (g *Generator) TermOfRank(r int) arena.TermID { return g.ranks[r] }

// Corpus generates cfg.Items items: ids are Seq with local shuffles (commit
// order is not id order), users and conversations interleave, each user's
// clock advances by turn length.
func Corpus(cfg Config) []arena.Item {
	g := New(cfg)
	return g.Corpus()
}

// Corpus generates the configured number of items.
func (g *Generator) Corpus() []arena.Item {
	cfg := g.cfg
	items := make([]arena.Item, cfg.Items)
	// One backing array for all term lists: millions of small allocations
	// would dominate building a large corpus.
	est := cfg.Items * int(cfg.MedianLen*1.6)
	termBuf := make([]arena.TermID, 0, est)
	freqBuf := make([]uint16, 0, est)
	clock := make([]int64, cfg.Users)
	conv := make([]int64, cfg.Users)
	left := make([]int, cfg.Users)
	nextConv := int64(1)
	tokens := make([]arena.TermID, 0, cfg.MaxLen)
	for i := range items {
		u := g.rng.IntN(cfg.Users)
		if left[u] <= 0 {
			conv[u] = nextConv
			nextConv++
			left[u] = 1 + g.rng.IntN(2*cfg.ConvLen)
		}
		left[u]--
		n := g.length()
		tokens = tokens[:0]
		for range n {
			if g.rng.Float64() < cfg.NameRate {
				tokens = append(tokens, arena.TermID(NameBase+u*namesPerUser+g.rng.IntN(namesPerUser)))
				continue
			}
			tokens = append(tokens, g.Term())
		}
		slices.Sort(tokens)
		start := len(termBuf)
		for j, t := range tokens {
			if j > 0 && t == tokens[j-1] {
				freqBuf[len(freqBuf)-1]++
				continue
			}
			termBuf = append(termBuf, t)
			freqBuf = append(freqBuf, 1)
		}
		end := len(termBuf)
		clock[u] += int64(n)
		items[i] = arena.Item{
			ID: int64(i + 1), Seq: int64(i + 1), User: int64(u + 1), Conv: conv[u],
			Terms: termBuf[start:end:end], Freqs: freqBuf[start:end:end], Length: uint32(n),
			BornClock: clock[u], Tau: float32(2000 + g.rng.IntN(8000)),
		}
	}
	// Ids assigned at insert, commits reordered within small windows.
	for i := 0; i+1 < len(items); i += 2 {
		if g.rng.IntN(4) == 0 {
			items[i].ID, items[i+1].ID = items[i+1].ID, items[i].ID
		}
	}
	return items
}

func (g *Generator) length() int {
	l := g.cfg.MedianLen * math.Exp(g.cfg.SigmaLen*g.rng.NormFloat64())
	return max(1, min(g.cfg.MaxLen, int(math.Round(l))))
}

// Queries builds n queries of minTerms..maxTerms terms, each asked by the
// owner of a random stored item: some of that item's terms (the question is
// about it) plus Zipfian words. K is 50.
func (g *Generator) Queries(items []arena.Item, n, minTerms, maxTerms int) []arena.Query {
	qs := make([]arena.Query, n)
	for i := range qs {
		it := items[g.rng.IntN(len(items))]
		nt := minTerms + g.rng.IntN(maxTerms-minTerms+1)
		var terms []arena.TermID
		take := min(len(it.Terms), 1+g.rng.IntN(max(1, nt-1)))
		for _, j := range g.rng.Perm(len(it.Terms))[:take] {
			terms = append(terms, it.Terms[j])
		}
		for len(terms) < nt {
			terms = append(terms, g.Term())
		}
		qs[i] = arena.Query{Terms: terms, Users: []int64{it.User}, K: 50}
	}
	return qs
}

// alias is Vose's alias table: O(1) draws from a discrete distribution.
type alias struct {
	prob  []float64
	alias []int32
}

func newAlias(w []float64) alias {
	n := len(w)
	sum := 0.0
	for _, x := range w {
		sum += x
	}
	a := alias{prob: make([]float64, n), alias: make([]int32, n)}
	scaled := make([]float64, n)
	var small, large []int32
	for i, x := range w {
		scaled[i] = x * float64(n) / sum
		if scaled[i] < 1 {
			small = append(small, int32(i))
		} else {
			large = append(large, int32(i))
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		a.prob[s] = scaled[s]
		a.alias[s] = l
		scaled[l] -= 1 - scaled[s]
		if scaled[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	for _, i := range append(small, large...) {
		a.prob[i] = 1
		a.alias[i] = i
	}
	return a
}

func (a *alias) draw(r *rand.Rand) int {
	i := r.IntN(len(a.prob))
	if r.Float64() < a.prob[i] {
		return i
	}
	return int(a.alias[i])
}
