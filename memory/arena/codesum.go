package arena

// codeSumGo is the table sum of one item's code: Rq·l in units of the
// tables' scale (signTables.estimate before the scaling). It is the
// reference the vector kernel (codesum_amd64.s) must equal: integer sums of
// the same table entries, so any order gives the same int32.
func codeSumGo(t *[codeBytes][256]int16, code []uint64) int32 {
	code = code[:codeWords:codeWords]
	var s0, s1 int32
	for i, x := range code {
		tb := t[8*i : 8*i+8 : 8*i+8]
		s0 += int32(tb[0][byte(x)]) + int32(tb[1][byte(x>>8)]) + int32(tb[2][byte(x>>16)]) + int32(tb[3][byte(x>>24)])
		s1 += int32(tb[4][byte(x>>32)]) + int32(tb[5][byte(x>>40)]) + int32(tb[6][byte(x>>48)]) + int32(tb[7][byte(x>>56)])
	}
	return s0 + s1
}

// codeSumsGo writes the table sum of each of the len(out) codes at code.
func codeSumsGo(t *[codeBytes][256]int16, code []uint64, out []int32) {
	for j := range out {
		out[j] = codeSumGo(t, code[j*codeWords:])
	}
}

// estimateBlock is how many items' table sums the first pass takes at once
// (codeSums): a block of sums lives on the stack.
const estimateBlock = 256

// sums writes into out the table sums of items [from, from+len(out)) of c.
func (t *signTables) sums(c *chunk, from int, out []int32) {
	codeSums(&t.t, c.code[from*codeWords:(from+len(out))*codeWords], out)
}

// scaled is the estimated cosine of an item with table sum s and estimator
// scale w, as estimate computes it.
func (t *signTables) scaled(s int32, w float32, qinv float64) float64 {
	if !(w > 0) {
		return 0
	}
	return float64(s) * t.scale * qinv * float64(w)
}
