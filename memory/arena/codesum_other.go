//go:build !amd64

package arena

// codeSums writes into out the table sum of each of the len(out) codes at
// code (codeWords words each).
func codeSums(t *[codeBytes][256]int16, code []uint64, out []int32) {
	codeSumsGo(t, code[:len(out)*codeWords], out)
}
