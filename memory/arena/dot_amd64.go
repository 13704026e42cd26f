package arena

import "golang.org/x/sys/cpu"

// dot8 is the int8 dot product of a and b[:len(a)]. A hybrid scan takes
// ~3,000 of them (the dense sample and the rescored candidates) and Go's
// scalar loop spent a quarter of the scan there; AVX2 widens sixteen
// components at a time and multiplies-and-adds them in pairs.
func dot8(a, b []int8) int32 {
	if len(a) == 0 {
		return 0
	}
	b = b[:len(a)]
	if cpu.X86.HasAVX2 {
		return dot8AVX2(&a[0], &b[0], len(a))
	}
	return dotGo(a, b)
}

// dot8AVX2 is dot8 over n components at a and b (dot_amd64.s).
//
//go:noescape
func dot8AVX2(a, b *int8, n int) int32
