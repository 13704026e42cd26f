package arena

import "golang.org/x/sys/cpu"

// codeSums writes into out the table sum of each of the len(out) codes at
// code (codeWords words each). The first pass of a hybrid scan takes one
// per visible item, 32 table loads each, and was most of the scan; AVX2
// gathers eight table entries at a time.
func codeSums(t *[codeBytes][256]int16, code []uint64, out []int32) {
	if len(out) == 0 {
		return
	}
	code = code[:len(out)*codeWords]
	if cpu.X86.HasAVX2 {
		codeSumsAVX2(t, &code[0], len(out), &out[0])
		return
	}
	codeSumsGo(t, code, out)
}

// codeSumsAVX2 is codeSums over n codes at code (codesum_amd64.s). Its
// gathers read four bytes at each two-byte entry: the last entry of the
// last table reads two bytes of signTables.scale, which follows the tables
// in the same allocation.
//
//go:noescape
func codeSumsAVX2(t *[codeBytes][256]int16, code *uint64, n int, out *int32)
