package memory

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard is the share of tenants one serving process owns: shard Index of
// Count (1 <= Index <= Count). The zero Shard owns every tenant. Owning a
// tenant decides only what the process warms at start; it serves any
// tenant it is sent, loading that arena on first use.
type Shard struct {
	Index, Count int
}

// ParseShard reads "i/n" (e.g. "2/3": the second of three shares); ""
// is the zero Shard.
func ParseShard(s string) (Shard, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Shard{}, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || n > 1<<16 || i < 1 || i > n {
		return Shard{}, fmt.Errorf("%q: want i/n with 1 <= i <= n (e.g. 2/3)", s)
	}
	return Shard{Index: i, Count: n}, nil
}

func (s Shard) String() string {
	if s.Count == 0 {
		return "all"
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Owns reports whether the tenant falls in this share.
func (s Shard) Owns(tenantID int64) bool {
	return s.Count <= 1 || ShardOf(tenantID, s.Count) == s.Index
}

// ShardOf is the share (1..n) a tenant falls in: jump consistent hash
// (Lamping and Veach, 2014) of the tenant id mixed by SplitMix64's
// finalizer. It is stable: the same id and n give the same share in every
// process and release, and going from n to n+1 shares moves only about
// 1/(n+1) of the tenants, all to the new share.
func ShardOf(tenantID int64, n int) int {
	if n <= 1 {
		return 1
	}
	key := mix64(uint64(tenantID))
	var b, j int64 = -1, 0
	for j < int64(n) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b) + 1
}

// mix64 is SplitMix64's finalizer: consecutive ids (tenant ids are a
// sequence) come out as unrelated keys.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
