package text

import (
	"math/rand/v2"
	"testing"

	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// naivePack is packKey's definition, byte by byte.
func naivePack(s string) pieceKey {
	var k pieceKey
	for i := 0; i < len(s); i++ {
		if i < 8 {
			k.lo |= uint64(s[i]) << (8 * i)
		} else {
			k.hi |= uint64(s[i]) << (8 * (i - 8))
		}
	}
	k.n = uint64(len(s))
	return k
}

func TestPackKey(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 0; n <= maxPacked; n++ {
		for range 200 {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(rng.IntN(256))
			}
			if got, want := packKey(string(b)), naivePack(string(b)); got != want {
				t.Fatalf("packKey(%q) = %+v, want %+v", b, got, want)
			}
		}
	}
	// Zero padding must not make keys that differ by trailing NULs equal.
	for _, pair := range [][2]string{{"a", "a\x00"}, {"", "\x00"}, {"abcdefgh", "abcdefgh\x00"}, {"\x00\x00\x00\x00", "\x00\x00\x00"}} {
		if packKey(pair[0]) == packKey(pair[1]) {
			t.Errorf("packKey(%q) == packKey(%q)", pair[0], pair[1])
		}
	}
}

// TestRankTableHoldsVocabulary: every entry of the vocabulary is found with
// its rank, and strings next to it (one byte longer or changed) are found
// only when they are entries themselves.
func TestRankTableHoldsVocabulary(t *testing.T) {
	t.Parallel()
	ranks, err := tiktoken_loader.NewOfflineLoader().LoadTiktokenBpe(Encoding + ".tiktoken")
	if err != nil {
		t.Fatal(err)
	}
	table, err := newRankTable(ranks)
	if err != nil {
		t.Fatal(err)
	}
	check := func(s string) {
		want, wantOK := ranks[s]
		if got, ok := table.lookup(s); ok != wantOK || got != want && ok {
			t.Fatalf("lookup(%q) = %d, %v; vocabulary says %d, %v", s, got, ok, want, wantOK)
		}
	}
	for key := range ranks {
		check(key)
		check(key + "\x00")
		check(key + "e")
		check(key[:len(key)-1] + "\x00")
		check(key[1:])
	}
}
