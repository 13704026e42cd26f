package arena

import (
	"encoding/binary"
	"slices"
	"testing"
)

// FuzzTermsRoundTrip checks that any item's terms survive canonicalisation
// and the varint encoding, the only form the arena keeps them in.
func FuzzTermsRoundTrip(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 2, 0, 9, 0, 0, 0, 1, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, raw []byte) {
		var it Item
		for len(raw) >= 6 {
			it.Terms = append(it.Terms, binary.LittleEndian.Uint32(raw))
			it.Freqs = append(it.Freqs, binary.LittleEndian.Uint16(raw[4:]))
			raw = raw[6:]
		}
		terms, freqs, _ := canonical(it)
		for i := 1; i < len(terms); i++ {
			if terms[i] <= terms[i-1] {
				t.Fatalf("canonical terms not strictly ascending: %v", terms)
			}
		}
		gotT, gotF := decodeTerms(appendTerms(nil, terms, freqs), nil, nil)
		if !slices.Equal(gotT, terms) || !slices.Equal(gotF, freqs) {
			t.Fatalf("round trip: %v %v -> %v %v", terms, freqs, gotT, gotF)
		}
	})
}
