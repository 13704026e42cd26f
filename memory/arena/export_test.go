package arena

// ProbeOf exposes a term's signature position to the tests that build
// colliding terms on purpose.
func ProbeOf(t TermID) [2]uint64 {
	p := termProbe(t)
	return [2]uint64{uint64(p.word), p.mask}
}
