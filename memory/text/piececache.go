package text

import (
	"hash/maphash"
	"strings"
	"sync"
)

// A frame counts the same stored turns on every request, and most of that
// time went to BPE-merging the pieces that are not one token whole (names,
// rare words, numbers): 80% of a frame's counting in the 250k-item memory
// path profile. pieceCache remembers each such piece's token count. It is
// sharded to keep concurrent frames from contending, and bounded: a full
// shard starts over, which costs only recounting.
const (
	cacheShards   = 64
	cacheShardMax = 2048 // entries per shard: ~128k pieces in all
)

type pieceCache struct {
	seed   maphash.Seed
	shards [cacheShards]cacheShard
}

type cacheShard struct {
	mu sync.RWMutex
	m  map[string]int32
}

func newPieceCache() *pieceCache {
	return &pieceCache{seed: maphash.MakeSeed()}
}

func (pc *pieceCache) shard(piece string) *cacheShard {
	return &pc.shards[maphash.String(pc.seed, piece)%cacheShards]
}

func (pc *pieceCache) get(piece string) (int, bool) {
	s := pc.shard(piece)
	s.mu.RLock()
	n, ok := s.m[piece]
	s.mu.RUnlock()
	return int(n), ok
}

func (pc *pieceCache) put(piece string, n int) {
	s := pc.shard(piece)
	s.mu.Lock()
	if s.m == nil || len(s.m) >= cacheShardMax {
		s.m = make(map[string]int32, 64)
	}
	// Cloned: the piece is a slice of a text that must not stay alive.
	s.m[strings.Clone(piece)] = int32(n)
	s.mu.Unlock()
}
