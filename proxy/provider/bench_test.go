package provider

import (
	"net/http"
	"testing"
)

// BenchmarkDetect: detection runs on every request; it should cost well
// under a microsecond.
func BenchmarkDetect(b *testing.B) {
	ps := testProviders()
	h := http.Header{"Authorization": {"Bearer sk-proj-abcdef"}, "X-Api-Key": {"sk-ant-api03-abcdef"}}
	for b.Loop() {
		if _, err := ps.Detect("gpt-4o-mini", h); err != nil {
			b.Fatal(err)
		}
	}
}
