package dict

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Dense rows (issue 16). A retrieval row of a version with vectors carries
// the SIF vector of its stored tokens, before the common component is
// removed: it depends on the tokens and the dictionary alone, so capture,
// derivation and the integrity check compute the same bytes. The tenant's
// common component is removed when the arena loads the row (Space.Unit).
//
// Encoding of a raw row (RawDense): a float32 scale, little-endian, then
// Dims int8 components; the vector is scale×q, quantized symmetrically with
// its largest component at ±127. nil when no token has a vector.

// RawDense is the encoded SIF vector of tokens: the mean, over the tokens
// that have a vector, of each word's vector times its SIF weight. Summed in
// token order in float64, the same in every process.
func (v *Vectors) RawDense(tokens []string) []byte {
	sum := make([]float64, v.Dims)
	n := 0
	for _, t := range tokens {
		w, ok := v.Lookup(t)
		if !ok {
			continue
		}
		f := float64(w.Weight) * float64(w.Scale)
		for d, q := range w.Q {
			sum[d] += f * float64(q)
		}
		n++
	}
	if n == 0 {
		return nil
	}
	for d := range sum {
		sum[d] /= float64(n)
	}
	return encodeRaw(sum)
}

func encodeRaw(x []float64) []byte {
	top := 0.0
	for _, c := range x {
		top = max(top, math.Abs(c))
	}
	if top == 0 {
		return nil
	}
	scale := float32(top / 127)
	out := make([]byte, 4+len(x))
	binary.LittleEndian.PutUint32(out, math.Float32bits(scale))
	for d, c := range x {
		out[4+d] = byte(int8(math.Round(c / float64(scale))))
	}
	return out
}

// DecodeRaw reads a raw row back as floats (scale×q).
func (v *Vectors) DecodeRaw(b []byte) ([]float64, error) {
	out := make([]float64, v.Dims)
	if err := v.decodeRawInto(b, out); err != nil {
		return nil, err
	}
	return out, nil
}

// decodeRawInto is DecodeRaw into out (v.Dims long).
func (v *Vectors) decodeRawInto(b []byte, out []float64) error {
	if len(b) != 4+v.Dims {
		return fmt.Errorf("dense row: %d bytes, want %d", len(b), 4+v.Dims)
	}
	scale := float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	if !(scale > 0) || math.IsInf(scale, 0) {
		return errors.New("dense row: scale is not a positive number")
	}
	for d := range out {
		out[d] = scale * float64(int8(b[4+d]))
	}
	return nil
}

// DictionaryComponent is the fallback common direction of a tenant with too
// few rows to have its own: the expected SIF vector of running text, the
// mean of the word vectors weighted by Zipf probability and SIF weight,
// summed in file order. On the development set it keeps most of what the
// tenant's own component gives (fused recall at 4000 tokens 0.858 against
// 0.871; no removal 0.848).
func (v *Vectors) DictionaryComponent() []float64 {
	mu := make([]float64, v.Dims)
	hn := harmonic(v.zipf)
	for row, rank := range v.ranks {
		p := 1 / (float64(rank+1) * hn)
		f := p * float64(v.weight[row]) * float64(v.scales[row])
		for d := range mu {
			mu[d] += f * float64(v.q[row*v.Dims+d])
		}
	}
	return unitVector(mu)
}

// Moments accumulates the uncentred second moment of raw rows, whose first
// eigenvector is the common component SIF removes. Rows must be added in a
// fixed order (item id) for the sums to be the same in every run.
type Moments struct {
	dims int
	m    []float64 // upper triangle, row-major, dims×dims
	n    int
}

// NewMoments starts an empty accumulation.
func (v *Vectors) NewMoments() *Moments {
	return &Moments{dims: v.Dims, m: make([]float64, v.Dims*v.Dims)}
}

// Add adds one decoded raw row.
func (m *Moments) Add(x []float64) {
	for i := range m.dims {
		xi := x[i]
		row := m.m[i*m.dims : (i+1)*m.dims]
		for j := i; j < m.dims; j++ {
			row[j] += xi * x[j]
		}
	}
	m.n++
}

// N is the number of rows added.
func (m *Moments) N() int { return m.n }

// MinComponentRows is how many rows with a vector a tenant needs for a
// component of its own; below it the dictionary's serves.
const MinComponentRows = 100

// Component is the first principal component (uncentred, as SIF removes it)
// by power iteration from a fixed start; the dictionary's component when
// fewer than MinComponentRows rows were added.
func (m *Moments) Component(v *Vectors) []float64 {
	if m.n < MinComponentRows {
		return v.DictionaryComponent()
	}
	d := m.dims
	at := func(i, j int) float64 {
		if i > j {
			i, j = j, i
		}
		return m.m[i*d+j]
	}
	u := make([]float64, d)
	for i := range u {
		u[i] = 1 / math.Sqrt(float64(d))
	}
	for range 200 {
		next := make([]float64, d)
		for i := range d {
			s := 0.0
			for j := range d {
				s += at(i, j) * u[j]
			}
			next[i] = s
		}
		u = unitVector(next)
	}
	return u
}

func unitVector(x []float64) []float64 {
	n := 0.0
	for _, c := range x {
		n += c * c
	}
	out := make([]float64, len(x))
	if n == 0 {
		return out
	}
	n = math.Sqrt(n)
	for i, c := range x {
		out[i] = c / n
	}
	return out
}

// EncodeComponent stores a component as Dims float32, little-endian.
func EncodeComponent(u []float64) []byte {
	out := make([]byte, 4*len(u))
	for i, c := range u {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(float32(c)))
	}
	return out
}

// Space is where the dense scores of one tenant under one version live: the
// version's vectors and the tenant's common component, frozen when the
// version was derived (or the dictionary's, for a tenant that started on
// it). Immutable.
type Space struct {
	V *Vectors
	U []float64 // unit common component
}

// NewSpace builds a space from an encoded component; nil or empty component
// bytes mean the dictionary's.
func NewSpace(v *Vectors, component []byte) (*Space, error) {
	if len(component) == 0 {
		return &Space{V: v, U: v.DictionaryComponent()}, nil
	}
	if len(component) != 4*v.Dims {
		return nil, fmt.Errorf("common component: %d bytes, want %d", len(component), 4*v.Dims)
	}
	u := make([]float64, v.Dims)
	for i := range u {
		u[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(component[4*i:])))
	}
	return &Space{V: v, U: u}, nil
}

// Unit turns a raw vector into what the arena scores: the common component
// removed, scaled to unit length, quantized to int8 with the largest
// component at ±127, and the inverse length of the int8 vector (so that
// dot(q_a, q_b)·inv_a·inv_b is the cosine). A zero vector gives nil.
func (s *Space) Unit(raw []float64) ([]int8, float32) {
	return s.unit(raw, make([]float64, len(raw)))
}

// unit is Unit with x (len(raw) long) as its scratch.
func (s *Space) unit(raw, x []float64) ([]int8, float32) {
	p := 0.0
	for i, c := range raw {
		p += c * s.U[i]
	}
	top := 0.0
	for i, c := range raw {
		x[i] = c - p*s.U[i]
		top = max(top, math.Abs(x[i]))
	}
	if top == 0 {
		return nil, 0
	}
	q := make([]int8, len(x))
	var n int64
	for i, c := range x {
		q[i] = int8(math.Round(c / top * 127))
		n += int64(q[i]) * int64(q[i])
	}
	if n == 0 {
		return nil, 0
	}
	return q, float32(1 / math.Sqrt(float64(n)))
}

// Row is Unit of an encoded raw row; nil for a row without a vector.
func (s *Space) Row(b []byte) ([]int8, float32, error) {
	if len(b) == 0 {
		return nil, 0, nil
	}
	// A cold load converts every row of the tenant: its two float vectors
	// live on the stack, and only the result is allocated.
	var buf [2 * rowStackDims]float64
	var raw, x []float64
	if d := s.V.Dims; d <= rowStackDims {
		raw, x = buf[:d], buf[rowStackDims:rowStackDims+d]
	} else {
		raw, x = make([]float64, d), make([]float64, d)
	}
	if err := s.V.decodeRawInto(b, raw); err != nil {
		return nil, 0, err
	}
	q, inv := s.unit(raw, x)
	return q, inv, nil
}

// rowStackDims is the widest vector Row converts without allocating its
// scratch (the shipped vectors have 100 dimensions).
const rowStackDims = 128

// Query is the query-side vector of a question's stored tokens, computed
// exactly as a row's (RawDense, then Unit), so a question and a turn with
// the same words score a cosine of 1.
func (s *Space) Query(tokens []string) ([]int8, float32) {
	raw := s.V.RawDense(tokens)
	if raw == nil {
		return nil, 0
	}
	x, err := s.V.DecodeRaw(raw)
	if err != nil {
		return nil, 0
	}
	return s.Unit(x)
}
