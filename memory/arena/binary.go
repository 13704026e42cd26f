package arena

// The dense first pass. Each item also keeps the signs of its vector's
// components as bits (a 1 for a positive component) and one scale, so that
// its cosine with a unit query q is estimated from 16 bytes instead of 100:
//
//	cos(q, u) ~ (q·s) / sum_k |u_k|
//
// where s is the item's sign vector and u its unit vector: s/sqrt(D) is the
// closest sign vector to u, and the ratio corrects for how far u is from it
// (the estimator of RaBitQ, Gao and Long 2024, without the random rotation:
// the components of a SIF vector with its common direction removed are
// already spread). q·s is read from per-query tables, one per byte of the
// code, so an item costs 16 table loads. The estimate only picks the
// candidates the exact cosine is computed for; it never reaches a score.

// codeWords is the number of 64-bit words of an item's sign code.
func codeWords(dims int) int { return (dims + 63) / 64 }

// appendCode appends the sign code of v and returns the estimator scale
// (0 for an item without a vector).
func appendCode(code []uint64, v []int8, inv float32, dims int) ([]uint64, float32) {
	start := len(code)
	code = append(code, make([]uint64, codeWords(dims))...)
	if len(v) != dims || !(inv > 0) {
		return code, 0
	}
	abs := 0
	for k, x := range v {
		if x > 0 {
			code[start+k/64] |= 1 << (k % 64)
		}
		if x < 0 {
			abs -= int(x)
		} else {
			abs += int(x)
		}
	}
	if abs == 0 {
		return code, 0
	}
	return code, float32(1 / (float64(inv) * float64(abs)))
}

// signTables are a query's per-byte tables: table[b][x] is q·s over the 8
// components of byte b for code byte x (+q_k for a set bit, -q_k else),
// components past dims counting 0.
type signTables [][256]int32

func newSignTables(q []int8) signTables {
	words := codeWords(len(q))
	t := make(signTables, 8*words)
	for b := range t {
		for x := range 256 {
			s := int32(0)
			for i := range 8 {
				k := 8*b + i
				if k >= len(q) {
					break
				}
				if x>>i&1 != 0 {
					s += int32(q[k])
				} else {
					s -= int32(q[k])
				}
			}
			t[b][x] = s
		}
	}
	return t
}

// dot is q·s for one item's code (q in int8 units).
func (t signTables) dot(code []uint64) int32 {
	var s0, s1 int32
	for w, x := range code {
		tb := t[8*w : 8*w+8 : 8*w+8]
		s0 += tb[0][byte(x)] + tb[1][byte(x>>8)] + tb[2][byte(x>>16)] + tb[3][byte(x>>24)]
		s1 += tb[4][byte(x>>32)] + tb[5][byte(x>>40)] + tb[6][byte(x>>48)] + tb[7][byte(x>>56)]
	}
	return s0 + s1
}

// estimate is the estimated cosine of item j of c with the query.
func (t signTables) estimate(c *chunk, j int, qinv float64) float64 {
	w := c.dw[j]
	if !(w > 0) {
		return 0
	}
	cw := len(t) / 8
	return float64(t.dot(c.code[j*cw:(j+1)*cw:(j+1)*cw])) * qinv * float64(w)
}
