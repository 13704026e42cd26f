package arena

import "encoding/binary"

// An item's terms are stored as one varint per term: the gap from the
// previous term id (the first from 0) shifted left by one, the low bit set
// when the frequency is above 1, in which case a second varint holds
// frequency-2. Chat turns draw ~20 distinct terms from a ~50k vocabulary,
// so a gap fits two bytes and most frequencies are 1: ~2.2 bytes per term
// instead of 6 for a uint32 id and a uint16 frequency. Only rescoring and
// read-back decode it.

func appendTerms(dst []byte, terms []TermID, freqs []uint16) []byte {
	prev := TermID(0)
	for i, t := range terms {
		v := uint64(t-prev) << 1
		prev = t
		if freqs[i] > 1 {
			dst = binary.AppendUvarint(dst, v|1)
			dst = binary.AppendUvarint(dst, uint64(freqs[i]-2))
			continue
		}
		dst = binary.AppendUvarint(dst, v)
	}
	return dst
}

// uvarint decodes the varint at enc[k:]; the one-byte case is inlined by
// callers' fast path.
func uvarint(enc []byte, k int) (uint64, int) {
	var v uint64
	for shift := uint(0); k < len(enc); shift += 7 {
		b := enc[k]
		k++
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v, k
		}
	}
	return v, k
}

// decodeTerms appends the decoded terms and frequencies of enc.
func decodeTerms(enc []byte, terms []TermID, freqs []uint16) ([]TermID, []uint16) {
	t := TermID(0)
	for k := 0; k < len(enc); {
		var v uint64
		v, k = uvarint(enc, k)
		t += TermID(v >> 1)
		f := uint16(1)
		if v&1 != 0 {
			var x uint64
			x, k = uvarint(enc, k)
			f = uint16(x + 2)
		}
		terms = append(terms, t)
		freqs = append(freqs, f)
	}
	return terms, freqs
}
