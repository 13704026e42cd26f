package store

import (
	"context"
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// TestRowDecoderMatchesPgx: the catch-up's hand decoder gives what pgx's
// own scan gives for the same rows, in binary and in text format (the
// simple protocol, where it hands over to pgx), edge values included.
func TestRowDecoderMatchesPgx(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbtest.Shared(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	const rowsSQL = `SELECT * FROM (VALUES
		(1::bigint, 2::bigint, 3::bigint, 4::bigint, 5::bigint, 0.25::float8, '{7,-8,2147483647}'::int[], '{1,-2,32767}'::smallint[], 11, 12, '\x0102ff'::bytea),
		(-9223372036854775808, 9223372036854775807, 0, 0, -1, -1e300, '{}'::int[], '{}'::smallint[], -2147483648, 0, NULL),
		(9, 9, 9, 9, 9, 'NaN', '{1}', '{1}', 1, 1, ''::bytea)
	) AS v ORDER BY 1`
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		rows, err := conn.Query(ctx, rowsSQL, mode)
		if err != nil {
			t.Fatal(err)
		}
		want, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ArenaItem])
		if err != nil {
			t.Fatal(err)
		}
		rows, err = conn.Query(ctx, rowsSQL, mode)
		if err != nil {
			t.Fatal(err)
		}
		var d rowDecoder
		got, err := pgx.CollectRows(rows, d.row)
		if err != nil {
			t.Fatalf("mode %v: %v", mode, err)
		}
		if d.generic != (mode == pgx.QueryExecModeSimpleProtocol) {
			t.Errorf("mode %v: generic %v", mode, d.generic)
		}
		if len(got) != len(want) {
			t.Fatalf("mode %v: %d rows, want %d", mode, len(got), len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.Tau != g.Tau && w.Tau != w.Tau { // NaN, compared apart
				g.Tau, w.Tau = 0, 0
			}
			if len(w.TermIDs) == 0 && len(g.TermIDs) == 0 { // {} is nil or empty; no caller tells them apart
				g.TermIDs, w.TermIDs = nil, nil
			}
			if len(w.Freqs) == 0 && len(g.Freqs) == 0 {
				g.Freqs, w.Freqs = nil, nil
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("mode %v row %d:\n got %+v\nwant %+v", mode, i, g, w)
			}
		}
	}
}

// TestArrayOfRefusesOddShapes: a malformed array is an error, never a
// panic or a misread.
func TestArrayOfRefusesOddShapes(t *testing.T) {
	t.Parallel()
	hdr := func(ndim, n uint32) []byte {
		b := make([]byte, 20)
		binary.BigEndian.PutUint32(b, ndim)
		binary.BigEndian.PutUint32(b[8:], 23)
		binary.BigEndian.PutUint32(b[12:], n)
		binary.BigEndian.PutUint32(b[16:], 1)
		return b
	}
	elem := func(size int32) []byte {
		b := make([]byte, 8)
		binary.BigEndian.PutUint32(b, uint32(size))
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"short header", []byte{0, 0, 0, 1}},
		{"two dimensions", hdr(2, 1)},
		{"count past the bytes", append(hdr(1, 2), elem(4)...)},
		{"negative count", hdr(1, 0xffffffff)},
		{"NULL element", append(hdr(1, 1), elem(-1)...)},
		{"element of another width", append(hdr(1, 1), elem(2)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var sl slab[int32]
			if _, err := arrayOf(tc.b, 4, &sl, func(b []byte) int32 { return int32(binary.BigEndian.Uint32(b)) }); err == nil {
				t.Error("no error")
			}
		})
	}
}

// FuzzArrayOf: any bytes decode to an error or to an array whose elements
// re-encode to the input.
func FuzzArrayOf(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 23, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 7})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 23})
	f.Fuzz(func(t *testing.T, b []byte) {
		var sl slab[int32]
		got, err := arrayOf(b, 4, &sl, func(b []byte) int32 { return int32(binary.BigEndian.Uint32(b)) })
		if err != nil || len(got) == 0 {
			return
		}
		body := b[20:]
		for i, v := range got {
			if int32(binary.BigEndian.Uint32(body[i*8+4:])) != v {
				t.Fatalf("element %d: %d", i, v)
			}
		}
	})
}

// TestSlabGrows: a decoder's slabs start small (a frame's catch-up reads a
// row or two) and double up to slabMax, and carved arrays never overlap.
func TestSlabGrows(t *testing.T) {
	t.Parallel()
	var s slab[int32]
	var lens []int
	var prev []int32
	for i := range 2000 {
		a := s.carve(50)
		if cap(a) != 50 {
			t.Fatalf("carve %d: capacity %d", i, cap(a))
		}
		for j := range a {
			a[j] = int32(i)
		}
		if prev != nil && prev[0] != int32(i-1) {
			t.Fatal("a carved array was overwritten")
		}
		prev = a
		if s.next != 0 && (len(lens) == 0 || lens[len(lens)-1] != s.next) {
			lens = append(lens, s.next)
		}
	}
	if lens[0] != slabFirst || lens[len(lens)-1] != slabMax {
		t.Errorf("slab lengths %v, want %d doubling to %d", lens, slabFirst, slabMax)
	}
}
