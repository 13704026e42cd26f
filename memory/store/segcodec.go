package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// A segment's payload (arena_segments, migration 000023) is a run of
// catch-up rows in their read order (seq, id). Version 1:
//
//	byte     1 (the format)
//	uvarint  rows, term entries of all rows, vector bytes of all rows
//	per row:
//	  varint  id minus the previous row's id (the first: minus 0)
//	  uvarint seq minus the previous row's seq
//	  uvarint user id, conversation id
//	  varint  born clock minus the previous row's
//	  uvarint the tau's bits XOR the previous row's (0: the same tau)
//	  uvarint term count; per term a varint gap from the previous term id
//	          (the first from 0), then per term a varint frequency
//	  varint  length, token count
//	  uvarint vector bytes + 1 (0: no vector), then the bytes
//
// Arrays come from three slabs sized by the header, so a segment of
// thousands of rows decodes in four allocations.
const segmentFormat = 1

var errSegment = errors.New("arena segment: malformed payload")

// EncodeSegment encodes rows (in seq, id order) as a segment's payload.
func EncodeSegment(rows []ArenaItem) []byte {
	terms, dense := 0, 0
	for _, r := range rows {
		terms += len(r.TermIDs)
		dense += len(r.Dense)
	}
	out := make([]byte, 0, 16+len(rows)*24+terms*3+dense)
	out = append(out, segmentFormat)
	out = binary.AppendUvarint(out, uint64(len(rows)))
	out = binary.AppendUvarint(out, uint64(terms))
	out = binary.AppendUvarint(out, uint64(dense))
	var prev ArenaItem
	var prevTau uint64
	for _, r := range rows {
		out = binary.AppendVarint(out, r.ID-prev.ID)
		out = binary.AppendUvarint(out, uint64(r.Seq-prev.Seq))
		out = binary.AppendUvarint(out, uint64(r.UserID))
		out = binary.AppendUvarint(out, uint64(r.ConvID))
		out = binary.AppendVarint(out, r.BornClock-prev.BornClock)
		tau := math.Float64bits(r.Tau)
		out = binary.AppendUvarint(out, tau^prevTau)
		prevTau = tau
		out = binary.AppendUvarint(out, uint64(len(r.TermIDs)))
		last := int64(0)
		for _, t := range r.TermIDs {
			out = binary.AppendVarint(out, int64(t)-last)
			last = int64(t)
		}
		for i := range r.TermIDs {
			f := int64(0)
			if i < len(r.Freqs) {
				f = int64(r.Freqs[i])
			}
			out = binary.AppendVarint(out, f)
		}
		out = binary.AppendVarint(out, int64(r.Length))
		out = binary.AppendVarint(out, int64(r.Tokens))
		if r.Dense == nil {
			out = binary.AppendUvarint(out, 0)
		} else {
			out = binary.AppendUvarint(out, uint64(len(r.Dense))+1)
			out = append(out, r.Dense...)
		}
		prev = r
	}
	return out
}

// segReader walks a payload; the first error sticks.
type segReader struct {
	b   []byte
	err error
}

func (s *segReader) uvarint() uint64 {
	if s.err != nil {
		return 0
	}
	v, n := binary.Uvarint(s.b)
	if n <= 0 {
		s.err = errSegment
		return 0
	}
	s.b = s.b[n:]
	return v
}

func (s *segReader) varint() int64 {
	if s.err != nil {
		return 0
	}
	v, n := binary.Varint(s.b)
	if n <= 0 {
		s.err = errSegment
		return 0
	}
	s.b = s.b[n:]
	return v
}

// count reads a length no larger than limit.
func (s *segReader) count(limit int) int {
	v := s.uvarint()
	if v > uint64(limit) {
		s.err = errSegment
		return 0
	}
	return int(v)
}

// DecodeSegment appends the rows of a payload to dst. A row's vector
// shares the payload's bytes (callers hold the payload no longer than the
// rows); its arrays share slabs sized by the header. Anything malformed,
// truncated or trailing is an error: the rows are then read from the table.
func DecodeSegment(dst []ArenaItem, payload []byte) ([]ArenaItem, error) {
	if len(payload) == 0 || payload[0] != segmentFormat {
		return dst, fmt.Errorf("%w: format", errSegment)
	}
	s := segReader{b: payload[1:]}
	// Every row takes at least 9 bytes and every term entry 2, so the
	// header cannot ask for more than the payload could hold.
	n := s.count(len(payload) / 9)
	nterms := s.count(len(payload) / 2)
	ndense := s.count(len(payload))
	if s.err != nil {
		return dst, s.err
	}
	terms := make([]int32, nterms)
	freqs := make([]int16, nterms)
	dst = slices.Grow(dst, n)
	var prev ArenaItem
	var prevTau uint64
	usedDense := 0
	for range n {
		var r ArenaItem
		r.ID = prev.ID + s.varint()
		r.Seq = prev.Seq + int64(s.uvarint())
		r.UserID = int64(s.uvarint())
		r.ConvID = int64(s.uvarint())
		r.BornClock = prev.BornClock + s.varint()
		prevTau ^= s.uvarint()
		r.Tau = math.Float64frombits(prevTau)
		k := s.count(len(terms))
		if s.err != nil {
			return dst, s.err
		}
		r.TermIDs, terms = terms[:k:k], terms[k:]
		r.Freqs, freqs = freqs[:k:k], freqs[k:]
		last := int64(0)
		for i := range k {
			last += s.varint()
			if last < math.MinInt32 || last > math.MaxInt32 {
				s.err = errSegment
			}
			r.TermIDs[i] = int32(last)
		}
		for i := range k {
			f := s.varint()
			if f < math.MinInt16 || f > math.MaxInt16 {
				s.err = errSegment
			}
			r.Freqs[i] = int16(f)
		}
		length, tokens := s.varint(), s.varint()
		if length < math.MinInt32 || length > math.MaxInt32 || tokens < math.MinInt32 || tokens > math.MaxInt32 {
			s.err = errSegment
		}
		r.Length, r.Tokens = int32(length), int32(tokens)
		if d := s.count(ndense - usedDense + 1); d > 0 {
			if d-1 > len(s.b) {
				return dst, errSegment
			}
			r.Dense = s.b[: d-1 : d-1]
			s.b = s.b[d-1:]
			usedDense += d - 1
		}
		if s.err != nil {
			return dst, s.err
		}
		dst = append(dst, r)
		prev = r
	}
	if len(s.b) != 0 || len(terms) != 0 || usedDense != ndense {
		return dst, fmt.Errorf("%w: counts disagree", errSegment)
	}
	return dst, nil
}

// SameRows reports whether two runs of catch-up rows are equal, an empty
// array or vector equal to none (the integrity check compares a segment
// with the rows it stands for).
func SameRows(a, b []ArenaItem) bool {
	return slices.EqualFunc(a, b, func(x, y ArenaItem) bool {
		return x.ID == y.ID && x.Seq == y.Seq && x.UserID == y.UserID && x.ConvID == y.ConvID &&
			x.BornClock == y.BornClock && math.Float64bits(x.Tau) == math.Float64bits(y.Tau) &&
			x.Length == y.Length && x.Tokens == y.Tokens &&
			slices.Equal(x.TermIDs, y.TermIDs) && slices.Equal(x.Freqs, y.Freqs) &&
			(x.Dense == nil) == (y.Dense == nil) && slices.Equal(x.Dense, y.Dense)
	})
}
