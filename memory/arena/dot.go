package arena

// dotGo is the int8 dot product in Go: eight at a time on re-sliced
// windows, so the compiler drops the bounds checks, into four
// accumulators. It is the reference the vector kernels (dot_amd64.s) must
// equal: integer sums, so any order gives the same int32.
func dotGo(a, b []int8) int32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 int32
	for len(a) >= 8 {
		x, y := a[:8:8], b[:8:8]
		s0 += int32(x[0])*int32(y[0]) + int32(x[4])*int32(y[4])
		s1 += int32(x[1])*int32(y[1]) + int32(x[5])*int32(y[5])
		s2 += int32(x[2])*int32(y[2]) + int32(x[6])*int32(y[6])
		s3 += int32(x[3])*int32(y[3]) + int32(x[7])*int32(y[7])
		a, b = a[8:], b[8:]
	}
	for i := range a {
		s0 += int32(a[i]) * int32(b[i])
	}
	return s0 + s1 + s2 + s3
}
