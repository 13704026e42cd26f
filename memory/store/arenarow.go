package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"
)

// The catch-up reads every row of a tenant when it loads one (a million at
// 1M items), so its rows are decoded from the wire by hand: pgx's generic
// path (a reflected struct scan, and an array codec allocating each array
// on its own) cost more than PostgreSQL took to send them. The arrays of
// many rows share one allocation (a slab), which the arena copies out of
// and the collector frees in one piece.

// A decoder's first slab holds slabFirst elements and each next one twice
// the last, up to slabMax: a frame's catch-up reads a row or two and must
// not allocate for a million.
const (
	slabFirst = 256
	slabMax   = 1 << 16
)

// slab is where a decoder carves one kind of array from.
type slab[T any] struct {
	free []T
	next int // the length of the next slab
}

// carve returns n elements, taking a new slab when the free part is short.
func (s *slab[T]) carve(n int) []T {
	if n > len(s.free) {
		s.next = min(max(2*s.next, slabFirst), slabMax)
		s.free = make([]T, max(n, s.next))
	}
	out := s.free[:n:n]
	s.free = s.free[n:]
	return out
}

// rowDecoder decodes catch-up rows, carving their arrays out of slabs.
type rowDecoder struct {
	terms slab[int32]
	freqs slab[int16]
	dense slab[byte]
	// checked: the result's columns were looked at; generic: some came
	// as text (a connection in simple-protocol mode, as behind a pooler
	// in statement mode), so pgx's own scan decodes them.
	checked, generic bool
}

var errRowShape = errors.New("catch-up row: unexpected shape")

// row decodes one row of catchUpItemSQL, in binary format.
func (d *rowDecoder) row(r pgx.CollectableRow) (ArenaItem, error) {
	if !d.checked {
		d.checked = true
		for _, f := range r.FieldDescriptions() {
			d.generic = d.generic || f.Format != pgx.BinaryFormatCode
		}
	}
	if d.generic {
		return pgx.RowToStructByPos[ArenaItem](r)
	}
	v := r.RawValues()
	if len(v) != 11 {
		return ArenaItem{}, fmt.Errorf("%w: %d columns", errRowShape, len(v))
	}
	var it ArenaItem
	var err error
	ints := []*int64{&it.ID, &it.Seq, &it.UserID, &it.ConvID, &it.BornClock}
	for i, p := range ints {
		if *p, err = int8At(v[i]); err != nil {
			return ArenaItem{}, err
		}
	}
	if len(v[5]) != 8 {
		return ArenaItem{}, fmt.Errorf("%w: tau", errRowShape)
	}
	it.Tau = math.Float64frombits(binary.BigEndian.Uint64(v[5]))
	if it.TermIDs, err = arrayOf(v[6], 4, &d.terms, func(b []byte) int32 { return int32(binary.BigEndian.Uint32(b)) }); err != nil {
		return ArenaItem{}, fmt.Errorf("term_ids: %w", err)
	}
	if it.Freqs, err = arrayOf(v[7], 2, &d.freqs, func(b []byte) int16 { return int16(binary.BigEndian.Uint16(b)) }); err != nil {
		return ArenaItem{}, fmt.Errorf("term_freqs: %w", err)
	}
	if it.Length, err = int4At(v[8]); err != nil {
		return ArenaItem{}, err
	}
	if it.Tokens, err = int4At(v[9]); err != nil {
		return ArenaItem{}, err
	}
	if v[10] != nil { // NULL: a row without a vector
		it.Dense = d.dense.carve(len(v[10]))
		copy(it.Dense, v[10])
	}
	return it, nil
}

func int8At(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("%w: bigint of %d bytes", errRowShape, len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

func int4At(b []byte) (int32, error) {
	if len(b) != 4 {
		return 0, fmt.Errorf("%w: integer of %d bytes", errRowShape, len(b))
	}
	return int32(binary.BigEndian.Uint32(b)), nil
}

// arrayOf decodes a one-dimensional array without NULLs in PostgreSQL's
// binary format (ndim, has-null flag, element type, then per dimension its
// length and lower bound, then each element as its length and bytes) whose
// elements are size bytes wide. NULL and an empty array both give nil, as
// pgx does for a NULL (an empty array gives an empty slice there: no caller
// tells them apart).
func arrayOf[T any](b []byte, size int, slab *slab[T], elem func([]byte) T) ([]T, error) {
	if b == nil {
		return nil, nil
	}
	if len(b) < 12 {
		return nil, fmt.Errorf("%w: array header", errRowShape)
	}
	ndim := binary.BigEndian.Uint32(b)
	if ndim == 0 {
		return nil, nil
	}
	if ndim != 1 || len(b) < 20 {
		return nil, fmt.Errorf("%w: %d-dimensional array", errRowShape, ndim)
	}
	n := int(int32(binary.BigEndian.Uint32(b[12:])))
	body := b[20:]
	if n < 0 || len(body) != n*(4+size) {
		return nil, fmt.Errorf("%w: array of %d elements in %d bytes", errRowShape, n, len(body))
	}
	out := slab.carve(n)
	for i := range out {
		e := body[i*(4+size):]
		if int32(binary.BigEndian.Uint32(e)) != int32(size) { // -1 is a NULL element
			return nil, fmt.Errorf("%w: array element %d", errRowShape, i)
		}
		out[i] = elem(e[4 : 4+size])
	}
	return out, nil
}
