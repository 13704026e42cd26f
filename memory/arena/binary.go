package arena

import "math"

// The dense first pass. Each item also keeps a 2-bit code of its vector
// (32 bytes instead of 100) and one scale, so that its cosine with a unit
// query q is estimated as
//
//	cos(q, u) ~ (Rq · l) / (l · Ru)
//
// where R is a fixed orthogonal rotation (the vector padded to 128
// components, random signs and a normalised Walsh-Hadamard transform,
// twice) and l the rotated vector quantized to the levels -3, -1, +1, +3
// times half its RMS component: l/|l| is the code's direction, and the ratio
// corrects for how far Ru is from it (the estimator of RaBitQ, Gao and Long
// 2024, with two bits a component). Without the rotation word-vector space
// is far from isotropic; with one bit a component the estimate needed a
// fifth of a 4,800-item corpus as candidates to keep the true top 120 of the
// development questions. Rq·l is read from per-query tables, one per byte
// of the code (four components), so an item costs 32 table loads. The
// estimate only picks the candidates whose cosine is computed exactly; it
// never reaches a score.
const (
	codeDims  = 128
	codeBits  = 2
	codeWords = codeDims * codeBits / 64
	codeBytes = codeWords * 8
)

// rotation is the fixed orthogonal rotation: two rounds of random signs
// (a hash of the position, so codes depend on nothing else) and a
// Walsh-Hadamard transform. An arena computes its signs once.
type rotation struct {
	signs [2][codeDims]float64
}

func newRotation() *rotation {
	r := new(rotation)
	for round := range r.signs {
		for k := range r.signs[round] {
			x := uint64(round*codeDims+k+1) * 0x9E3779B97F4A7C15
			x ^= x >> 31
			x *= 0xBF58476D1CE4E5B9
			x ^= x >> 29
			r.signs[round][k] = float64(int(x&1)*2 - 1)
		}
	}
	return r
}

// rotate returns R·v (len(v) <= codeDims).
func (r *rotation) rotate(v []int8) [codeDims]float64 {
	var x [codeDims]float64
	for k, c := range v {
		x[k] = float64(c)
	}
	for round := range r.signs {
		for k := range x {
			x[k] *= r.signs[round][k]
		}
		hadamard(&x)
	}
	// Each unnormalised transform scales by sqrt(codeDims).
	for k := range x {
		x[k] *= 1.0 / codeDims
	}
	return x
}

// hadamard is the unnormalised Walsh-Hadamard transform of x in place.
// The first two stages are written out, and the rest index the array with
// a mask the compiler can prove in range: a cold load codes every vector
// of the tenant, and the sliced loop cost more than the projection. The
// sums are the same, in the same order, as the textbook loop's
// (TestHadamardMatchesTextbook).
func hadamard(x *[codeDims]float64) {
	for i := 0; i < codeDims; i += 4 {
		a, b, c, d := x[i], x[i+1], x[i+2], x[i+3]
		a, b, c, d = a+b, a-b, c+d, c-d
		x[i], x[i+1], x[i+2], x[i+3] = a+c, b+d, a-c, b-d
	}
	for h := 4; h < codeDims; h *= 2 {
		for i := 0; i < codeDims; i += 2 * h {
			for j := i; j < i+h; j++ {
				a, b := x[j&(codeDims-1)], x[(j+h)&(codeDims-1)]
				x[j&(codeDims-1)], x[(j+h)&(codeDims-1)] = a+b, a-b
			}
		}
	}
}

// appendCode appends the code of v and returns the estimator scale (0 for
// an item without a vector).
func appendCode(code []uint64, rot *rotation, v []int8, inv float32) ([]uint64, float32) {
	start := len(code)
	code = append(code, make([]uint64, codeWords)...)
	if len(v) == 0 || len(v) > codeDims || !(inv > 0) {
		return code, 0
	}
	x := rot.rotate(v)
	ss := 0.0
	for _, c := range x {
		ss += c * c
	}
	step := math.Sqrt(ss / codeDims) // twice the level unit: a threshold
	lx := 0.0
	for k, c := range x {
		idx := uint64(0) // levels -3, -1, +1, +3 as 0..3
		switch {
		case c >= step:
			idx = 3
		case c >= 0:
			idx = 2
		case c >= -step:
			idx = 1
		}
		code[start+k*codeBits/64] |= idx << (k * codeBits % 64)
		lx += level(idx) * c
	}
	if !(lx > 0) {
		return code, 0
	}
	return code, float32(1 / (float64(inv) * lx))
}

func level(idx uint64) float64 { return float64(2*int(idx) - 3) }

// signTables are a query's per-byte tables: table[b][x] is Rq·l over the 4
// components of byte b for code byte x, in units of scale. int16 keeps the
// 32 tables within 16 KB, so they stay in the first-level cache while the
// codes stream past.
type signTables struct {
	t [codeBytes][256]int16
	// scale must stay right after t: the AVX2 table sum (codesum_amd64.s)
	// gathers four bytes at each two-byte entry, so its read of t's last
	// entry takes two bytes of scale, which must be in the same allocation.
	scale float64
}

func newSignTables(rot *rotation, q []int8) *signTables {
	rq := rot.rotate(q)
	const per = 8 / codeBits
	var raw [codeBytes][256]float64
	top := 0.0
	for b := range raw {
		for x := range 256 {
			s := 0.0
			for i := range per {
				s += rq[per*b+i] * level(uint64(x>>(codeBits*i))&(1<<codeBits-1))
			}
			raw[b][x] = s
			top = max(top, math.Abs(s))
		}
	}
	t := &signTables{scale: 1}
	if top > 0 {
		t.scale = top / math.MaxInt16
	}
	for b := range raw {
		for x := range 256 {
			t.t[b][x] = int16(math.Round(raw[b][x] / t.scale))
		}
	}
	return t
}

// estimate is the estimated cosine of item j of c with the query (whose
// int8 vector has inverse length qinv).
func (t *signTables) estimate(c *chunk, j int, qinv float64) float64 {
	w := c.dw[j]
	if !(w > 0) {
		return 0
	}
	code := c.code[j*codeWords : (j+1)*codeWords : (j+1)*codeWords]
	var s0, s1 int32
	for i, x := range code {
		tb := t.t[8*i : 8*i+8 : 8*i+8]
		s0 += int32(tb[0][byte(x)]) + int32(tb[1][byte(x>>8)]) + int32(tb[2][byte(x>>16)]) + int32(tb[3][byte(x>>24)])
		s1 += int32(tb[4][byte(x>>32)]) + int32(tb[5][byte(x>>40)]) + int32(tb[6][byte(x>>48)]) + int32(tb[7][byte(x>>56)])
	}
	return float64(s0+s1) * t.scale * qinv * float64(w)
}
