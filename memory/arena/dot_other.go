//go:build !amd64

package arena

// dot8 is the int8 dot product of a and b[:len(a)].
func dot8(a, b []int8) int32 { return dotGo(a, b) }
