package dict

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/memory/text"
)

// This file is the offline experiment behind the shipped vectors and the
// dense retrieval rows issue 16 plans: SIF sentence vectors of single turns
// on the development set, alone and fused with BM25, with the row encodings
// an arena could hold. None of it is in the server.

// The figures TestVectorsLoCoMo guards, measured on the shipped file: word
// coverage, and fused recall at 4000 tokens against BM25 alone (0.871
// against 0.788 when measured).
const (
	minVectorCoverage = 0.97
	minFusedGain4000  = 0.05
)

// sifVector is the SIF sentence vector of tokens (Arora et al. 2017): the
// mean of their word vectors, each weighed a/(a+p(w)). Tokens without a
// vector (stopwords, numbers, rare words) add nothing.
func sifVector(v *Vectors, toks []string) []float64 {
	out := make([]float64, v.Dims)
	n := 0
	for _, t := range toks {
		w, ok := v.Lookup(t)
		if !ok {
			continue
		}
		f := float64(w.Weight) * float64(w.Scale)
		for d, q := range w.Q {
			out[d] += f * float64(q)
		}
		n++
	}
	for d := range out {
		out[d] /= float64(max(n, 1))
	}
	return out
}

// commonComponent is the first principal component of vs (uncentered, as
// SIF removes it), by power iteration from a fixed start.
func commonComponent(vs [][]float64) []float64 {
	dims := len(vs[0])
	u := make([]float64, dims)
	for d := range u {
		u[d] = 1 / math.Sqrt(float64(dims))
	}
	for range 100 {
		next := make([]float64, dims)
		for _, v := range vs {
			p := dot(v, u)
			for d := range v {
				next[d] += p * v[d]
			}
		}
		n := math.Sqrt(dot(next, next))
		if n == 0 {
			return u
		}
		for d := range next {
			next[d] /= n
		}
		u = next
	}
	return u
}

func removeComponent(v, u []float64) {
	p := dot(v, u)
	for d := range v {
		v[d] -= p * u[d]
	}
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func unit(v []float64) []float64 {
	out := slices.Clone(v)
	if n := math.Sqrt(dot(v, v)); n > 0 {
		for d := range out {
			out[d] /= n
		}
	}
	return out
}

// rowCode is what an arena would hold per item: the unit sentence vector
// as int8 (largest component ±127) with the inverse length of the int8
// vector, and a 128-bit sign code of a fixed random projection.
type rowCode struct {
	q     []int8
	inv   float32
	signs []uint64
}

func encodeRow(v []float64, proj [][]float64) rowCode {
	peak := 0.0
	for _, x := range v {
		peak = max(peak, math.Abs(x))
	}
	r := rowCode{q: make([]int8, len(v)), signs: make([]uint64, (len(proj)+63)/64)}
	var n2 int64
	for d, x := range v {
		if peak > 0 {
			r.q[d] = int8(math.Round(x / peak * 127))
		}
		n2 += int64(r.q[d]) * int64(r.q[d])
	}
	if n2 > 0 {
		r.inv = float32(1 / math.Sqrt(float64(n2)))
	}
	for b, p := range proj {
		if dot(v, p) > 0 {
			r.signs[b/64] |= 1 << (b % 64)
		}
	}
	return r
}

func (r rowCode) cosine(o rowCode) float64 {
	var s int32
	for d := range r.q {
		s += int32(r.q[d]) * int32(o.q[d])
	}
	return float64(s) * float64(r.inv) * float64(o.inv)
}

// hammingCosine estimates the cosine from the sign codes: the angle is π
// times the share of differing bits (Charikar's SimHash).
func (r rowCode) hammingCosine(o rowCode, nbits int) float64 {
	h := 0
	for i, w := range r.signs {
		h += bits.OnesCount64(w ^ o.signs[i])
	}
	return math.Cos(math.Pi * float64(h) / float64(nbits))
}

// projection is nbits fixed random Gaussian directions.
func projection(nbits, dims int) [][]float64 {
	rng := rand.New(rand.NewPCG(16, 3))
	out := make([][]float64, nbits)
	for i := range out {
		out[i] = make([]float64, dims)
		for d := range out[i] {
			out[i][d] = rng.NormFloat64()
		}
	}
	return out
}

// scores is BM25 for every document, zero where no term matches.
func (m *bm25) scores(query []uint32) []float64 {
	const k1, b = 1.2, 0.75
	n := float64(len(m.docs))
	out := make([]float64, len(m.docs))
	for _, q := range query {
		df := float64(m.df[q])
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for i, tf := range m.docs {
			if f := float64(tf[q]); f > 0 {
				out[i] += idf * f * (k1 + 1) / (f + k1*(1-b+b*float64(m.lens[i])/m.avgLen))
			}
		}
	}
	return out
}

// zscores standardizes scores over all of a sample's turns, which puts
// BM25's unbounded scores and cosines on one scale.
func zscores(x []float64) []float64 {
	mean, sd := 0.0, 0.0
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		sd += (v - mean) * (v - mean)
	}
	sd = math.Sqrt(sd / float64(len(x)))
	out := make([]float64, len(x))
	if sd == 0 {
		return out
	}
	for i, v := range x {
		out[i] = (v - mean) / sd
	}
	return out
}

func meanSD(x []float64) (mean, sd float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		sd += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(sd / float64(len(x)))
}

func fuse(bm, dense []float64, wDense float64) []float64 {
	zb, zd := zscores(bm), zscores(dense)
	out := make([]float64, len(bm))
	for i := range out {
		out[i] = (1-wDense)*zb[i] + wDense*zd[i]
	}
	return out
}

// frameRecall fills a frame in score order up to budget tokens (a turn that
// does not fit is skipped) and returns the share of evidence in it. Turns
// scoring zero or less only enter when every score is (dense scores are
// never all zero, BM25's are when no word matches).
func frameRecall(score []float64, costs []int, budget int, evidence []int, positiveOnly bool) float64 {
	order := make([]int, 0, len(score))
	for i, s := range score {
		if !positiveOnly || s > 0 {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return score[order[a]] > score[order[b]] })
	in := make(map[int]bool)
	used := 0
	for _, i := range order {
		if used+costs[i] <= budget {
			used += costs[i]
			in[i] = true
		}
	}
	found := 0
	for _, e := range evidence {
		if in[e] {
			found++
		}
	}
	return float64(found) / float64(len(evidence))
}

// byScore returns indexes of score in descending order, ties by position.
func byScore(score []float64) []int {
	order := make([]int, len(score))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return score[order[a]] > score[order[b]] })
	return order
}

// twoPass ranks as an arena with sign codes would: a first pass fuses BM25
// with the codes' cosine estimate over every turn, a second rescores the
// first pass's top k with the exact int8 cosine, standardized with exact
// statistics of every 8th turn (a cheap unbiased sample). Turns outside the
// top k rank after it.
func twoPass(bm, estimate, exact []float64, k int) []float64 {
	var sample []float64
	for i := 0; i < len(exact); i += 8 {
		sample = append(sample, exact[i])
	}
	return rescore(bm, exact, sample, byScore(fuse(bm, estimate, 0.6))[:min(k, len(bm))])
}

// union rescores the top k by BM25 (those with a match) together with the
// top k by the codes' estimate.
func union(bm, estimate, exact []float64, k int) []float64 {
	var cand []int
	for _, i := range byScore(bm)[:min(k, len(bm))] {
		if bm[i] > 0 {
			cand = append(cand, i)
		}
	}
	cand = append(cand, byScore(estimate)[:min(k, len(bm))]...)
	var sample []float64
	for i := 0; i < len(exact); i += 8 {
		sample = append(sample, exact[i])
	}
	return rescore(bm, exact, sample, cand)
}

func rescore(bm, exact, sample []float64, cand []int) []float64 {
	zb := zscores(bm)
	mean, sd := meanSD(sample)
	out := make([]float64, len(bm))
	for i := range out {
		out[i] = math.Inf(-1)
	}
	for _, i := range cand {
		out[i] = 0.4*zb[i] + 0.6*(exact[i]-mean)/sd
	}
	return out
}

// TestVectorsLoCoMo measures the shipped vectors on the development set:
// the share of word tokens with a vector, and evidence recall of dense and
// fused rankings over single turns at 2000 and 4000 tokens, with the row
// encodings an arena could hold (go test -v -run TestVectorsLoCoMo
// ./memory/dict).
func TestVectorsLoCoMo(t *testing.T) {
	t.Parallel()
	v := builtinVectors(t)
	lex, err := Builtin(v.Lexicon)
	if err != nil {
		t.Fatal(err)
	}
	counter, err := text.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	samples := loadLoCoMo(t, locomoDev)

	// Coverage: word tokens of turns and questions that are neither
	// stopwords nor numbers.
	tokens, covered := 0, 0
	types, coveredTypes := make(map[string]bool), make(map[string]bool)
	count := func(s string) {
		for _, tok := range text.Normalize(s) {
			if _, ok := lex.Lookup(tok); !ok || strings.Trim(tok, "0123456789.") == "" {
				continue
			}
			tokens++
			types[tok] = true
			if _, ok := v.Lookup(tok); ok {
				covered++
				coveredTypes[tok] = true
			}
		}
	}
	for _, s := range samples {
		for _, tr := range s.turns {
			count(tr.text)
		}
		for _, q := range s.questions {
			count(q.question)
		}
	}
	coverage := float64(covered) / float64(tokens)
	t.Logf("coverage: %.4f of %d word tokens, %.4f of %d distinct words", coverage, tokens,
		float64(len(coveredTypes))/float64(len(types)), len(types))
	if coverage < minVectorCoverage {
		t.Errorf("only %.4f of the development set's word tokens have a vector, want >= %.2f", coverage, minVectorCoverage)
	}

	proj := map[int][][]float64{128: projection(128, v.Dims), 256: projection(256, v.Dims)}
	names := []string{
		"BM25 alone", "dense alone", "fused 0.4 z(bm25) + 0.6 z(dense)", "fused 0.5/0.5", "fused 0.3/0.7",
		"fused, no common-component removal", "fused, int8 rows (exact scan)",
		"fused, 128-bit codes alone", "fused, 256-bit codes alone",
		"128-bit first pass, int8 rescore of top 200", "256-bit first pass, int8 rescore of top 200",
		"128-bit, rescore top 100 BM25 + top 100 codes", "256-bit, rescore top 100 BM25 + top 100 codes",
	}
	sums := make([][2]float64, len(names))
	budgets := [2]int{2000, 4000}
	questions := 0
	for _, s := range samples {
		docs := make([][]string, len(s.turns))
		costs := make([]int, len(s.turns))
		raw := make([][]float64, len(s.turns))
		for i, tr := range s.turns {
			docs[i] = text.Normalize(tr.text)
			costs[i] = counter.Count(tr.text)
			raw[i] = sifVector(v, docs[i])
		}
		index := newBM25(lex, docs)
		// The common component is the tenant's: computed over its rows.
		u := commonComponent(raw)
		rows := make([][]float64, len(raw))
		codes := map[int][]rowCode{128: make([]rowCode, len(raw)), 256: make([]rowCode, len(raw))}
		for i, r := range raw {
			c := slices.Clone(r)
			removeComponent(c, u)
			rows[i] = unit(c)
			for nb, p := range proj {
				codes[nb][i] = encodeRow(rows[i], p)
			}
		}
		for _, q := range s.questions {
			if q.category < 1 || q.category > 4 || len(q.evidence) == 0 {
				continue
			}
			questions++
			qt := text.Normalize(q.question)
			bm := index.scores(lex.QueryTerms(qt))
			qraw := sifVector(v, qt)
			qv := slices.Clone(qraw)
			removeComponent(qv, u)
			qv = unit(qv)
			dense := make([]float64, len(rows))
			noPC := make([]float64, len(rows))
			for i := range rows {
				dense[i] = dot(qv, rows[i])
				noPC[i] = dot(unit(qraw), unit(raw[i]))
			}
			exact := make([]float64, len(rows))
			estimate := map[int][]float64{}
			for nb, p := range proj {
				qc := encodeRow(qv, p)
				estimate[nb] = make([]float64, len(rows))
				for i, c := range codes[nb] {
					exact[i] = qc.cosine(c) // the same for either code length
					estimate[nb][i] = qc.hammingCosine(c, nb)
				}
			}
			rankings := [][]float64{
				bm, dense, fuse(bm, dense, 0.6), fuse(bm, dense, 0.5), fuse(bm, dense, 0.7),
				fuse(bm, noPC, 0.6), fuse(bm, exact, 0.6),
				fuse(bm, estimate[128], 0.6), fuse(bm, estimate[256], 0.6),
				twoPass(bm, estimate[128], exact, 200), twoPass(bm, estimate[256], exact, 200),
				union(bm, estimate[128], exact, 100), union(bm, estimate[256], exact, 100),
			}
			for i, r := range rankings {
				for b, budget := range budgets {
					sums[i][b] += frameRecall(r, costs, budget, q.evidence, i == 0)
				}
			}
		}
	}
	n := float64(questions)
	for i, name := range names {
		t.Logf("%-46s recall @2000 %.3f, @4000 %.3f", name, sums[i][0]/n, sums[i][1]/n)
	}
	t.Logf("%d questions of categories 1-4 with evidence", questions)
	if gain := (sums[2][1] - sums[0][1]) / n; gain < minFusedGain4000 {
		t.Errorf("fused recall @4000 is %.3f above BM25's, want >= %.2f", gain, minFusedGain4000)
	}
}

// BenchmarkDenseScan is what one query costs over 100,000 rows laid out
// as an arena would hold them (contiguous int8 components, contiguous sign
// codes): the exact int8 dot product against the codes' Hamming distance.
func BenchmarkDenseScan(b *testing.B) {
	const rows, dims = 100000, 100
	rng := rand.New(rand.NewPCG(1, 2))
	q8 := make([]int8, rows*dims)
	for i := range q8 {
		q8[i] = int8(rng.IntN(255) - 127)
	}
	signs := make([]uint64, rows*4)
	for i := range signs {
		signs[i] = rng.Uint64()
	}
	query := q8[:dims]
	b.Run("int8", func(b *testing.B) {
		var sink int32
		for b.Loop() {
			for r := 0; r < rows; r++ {
				row := q8[r*dims : r*dims+dims]
				var s int32
				for d, x := range query {
					s += int32(x) * int32(row[d])
				}
				sink += s
			}
		}
		_ = sink
	})
	for _, words := range []int{2, 4} {
		b.Run(strconv.Itoa(64*words)+"-bit", func(b *testing.B) {
			qs := signs[:words]
			sink := 0
			for b.Loop() {
				for r := 0; r < rows; r++ {
					row := signs[r*words : r*words+words]
					for i, w := range qs {
						sink += bits.OnesCount64(w ^ row[i])
					}
				}
			}
			_ = sink
		})
	}
}
