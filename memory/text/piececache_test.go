package text

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// pieceCacheKey keys a piece as pieceTokens does.
func pieceCacheKey(pc *pieceCache, piece string) (pieceKey, uint64) {
	if len(piece) > maxPacked {
		return pc.longKey(piece)
	}
	k := packKey(piece)
	return k, k.hash()
}

// TestPieceCacheNeverLies: whatever evictions and racing inserts do, a hit
// is the count that was put for that very piece. Every piece is put into
// the same pair of slots, forcing evictions, and read back from many
// goroutines.
func TestPieceCacheNeverLies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		pieces func(i int) string
	}{
		{"packed", func(i int) string { return fmt.Sprintf("p%d", i) }},
		{"packed with NULs", func(i int) string { return "x" + strings.Repeat("\x00", i%15) }},
		{"long", func(i int) string { return fmt.Sprintf("%040d", i) }},
		{"both", func(i int) string { return strings.Repeat("ab", i%20+1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pc := newPieceCache()
			count := func(piece string) int { return len(piece)*7 + 1 }
			var wg sync.WaitGroup
			errs := make(chan string, 100)
			for g := range 4 {
				wg.Go(func() {
					for i := range 2000 {
						piece := tt.pieces(i + g)
						k, h := pieceCacheKey(pc, piece)
						// One pair for all: the keys' own hashes decide
						// nothing here.
						h = 0
						if n, ok := pc.get(piece, k, h); ok && n != count(piece) {
							select {
							case errs <- fmt.Sprintf("get(%q) = %d, put %d", piece, n, count(piece)):
							default:
							}
						}
						pc.put(piece, k, h, count(piece))
					}
				})
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}
			piece := tt.pieces(7)
			k, h := pieceCacheKey(pc, piece)
			pc.put(piece, k, h, count(piece))
			if n, ok := pc.get(piece, k, h); !ok || n != count(piece) {
				t.Errorf("get(%q) right after put = %d, %v", piece, n, ok)
			}
		})
	}
}
