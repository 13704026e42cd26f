package dict

import (
	"math"
	"strings"
)

// Vectors are the word vectors of one dictionary version, looked up by
// stored token (text.Normalize's output). Immutable and safe for
// concurrent use.
type Vectors struct {
	Version, Dims int
	Name          string
	// Lexicon is the lexical dictionary version whose stopwords the file
	// leaves out.
	Lexicon int

	rows   map[string]int32 // word -> row
	ranks  []uint32         // row -> frequency rank in the source
	weight []float32        // row -> SIF weight
	scales []float32        // row -> dequantization scale
	zipf   int              // source vocabulary size, for DictionaryComponent
	q      []int8           // row*Dims.. -> quantized components
}

// WordVector is one word's vector, Scale*Q, with the word's frequency rank
// in the source corpus and its SIF weight.
type WordVector struct {
	// Q holds the quantized components; it aliases the Vectors storage and
	// must not be changed.
	Q     []int8
	Scale float32
	// Rank is the word's rank among the source's words by frequency (0:
	// the most frequent).
	Rank uint32
	// Weight is the word's SIF weight a/(a+p), p its Zipf probability
	// (see the package doc): near 1 for rare words, lower for common ones.
	Weight float32
}

// NewVectors indexes a parsed vector file.
func NewVectors(f *VectorFile) (*Vectors, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	v := &Vectors{
		Version: f.Version, Dims: f.Dims, Name: f.Name, Lexicon: f.Lexicon,
		rows:   make(map[string]int32, len(f.Words)),
		ranks:  f.Ranks,
		weight: make([]float32, len(f.Words)),
		scales: f.Scales,
		zipf:   f.ZipfN,
		q:      f.Q,
	}
	hn := harmonic(f.ZipfN)
	for i, w := range f.Words {
		v.rows[w] = int32(i)
		p := 1 / (float64(f.Ranks[i]+1) * hn)
		v.weight[i] = float32(f.SIF / (f.SIF + p))
	}
	return v, nil
}

// harmonic is H_n, the normalizer of a Zipf distribution over n words.
// Summed from the smallest term up, the same in every process.
func harmonic(n int) float64 {
	h := 0.0
	for k := n; k >= 1; k-- {
		h += 1 / float64(k)
	}
	return h
}

// Len is the number of words with a vector.
func (v *Vectors) Len() int { return len(v.ranks) }

// Lookup returns the vector of one stored token, and false for a word
// without one (a stopword, a number, a rare word). A possessive "'s"
// without a vector of its own is stripped first, as Dictionary.Lookup
// strips it: "caroline's" has the vector of "caroline".
func (v *Vectors) Lookup(token string) (WordVector, bool) {
	row, ok := v.rows[token]
	if !ok {
		stem, cut := strings.CutSuffix(token, "'s")
		if !cut {
			return WordVector{}, false
		}
		if row, ok = v.rows[stem]; !ok {
			return WordVector{}, false
		}
	}
	at := int(row) * v.Dims
	return WordVector{
		Q:      v.q[at : at+v.Dims : at+v.Dims],
		Scale:  v.scales[row],
		Rank:   v.ranks[row],
		Weight: v.weight[row],
	}, true
}

// Similarity is the cosine of two tokens' vectors, and false when either
// has none.
func (v *Vectors) Similarity(a, b string) (float64, bool) {
	va, ok := v.Lookup(a)
	if !ok {
		return 0, false
	}
	vb, ok := v.Lookup(b)
	if !ok {
		return 0, false
	}
	return cosine(va.Q, vb.Q), true
}

// cosine of two quantized vectors; their scales cancel out.
func cosine(a, b []int8) float64 {
	var dot, na, nb int64
	for i := range a {
		x, y := int64(a[i]), int64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return float64(dot) / math.Sqrt(float64(na)*float64(nb))
}

// Norm is the Euclidean length of the dequantized vector.
func (w WordVector) Norm() float64 {
	var s int64
	for _, x := range w.Q {
		s += int64(x) * int64(x)
	}
	return float64(w.Scale) * math.Sqrt(float64(s))
}
