package bench

import (
	"cmp"
	"slices"
	"time"
)

// Dist is the shape of one sample of latencies.
type Dist struct {
	N   int
	P50 time.Duration
	P99 time.Duration
}

// DistOf summarises ds (nearest-rank percentiles; ds is not modified).
func DistOf(ds []time.Duration) Dist {
	if len(ds) == 0 {
		return Dist{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return Dist{N: len(s), P50: Percentile(s, 0.50), P99: Percentile(s, 0.99)}
}

// Percentile is the nearest-rank percentile p (0..1] of sorted.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[rank(len(sorted), p)]
}

// rank is the index Percentile p takes among n sorted samples.
func rank(n int, p float64) int {
	return max(0, min(n-1, int(float64(n)*p+0.999999)-1))
}

// slowAndMiddle sorts a round by key and returns its samples at or beyond
// the p99 and its middle ones (45th to 55th percentile). In a round of a
// few samples the ranks meet: the middle stops short of the slow ones
// rather than count them twice.
func slowAndMiddle[T any](r []T, key func(T) time.Duration) (slow, middle []T) {
	if len(r) == 0 {
		return nil, nil
	}
	s := slices.SortedFunc(slices.Values(r), func(a, b T) int { return cmp.Compare(key(a), key(b)) })
	top := rank(len(s), 0.99)
	return s[top:], s[min(rank(len(s), 0.45), top):min(rank(len(s), 0.55)+1, top)]
}

// Median is the median of xs (the lower middle for an even count, so the
// result is always a measured value).
func Median[T int | int64 | float64 | time.Duration](xs []T) T {
	if len(xs) == 0 {
		var z T
		return z
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// Span is the smallest and largest of xs: how far the rounds disagree.
func Span[T int | int64 | float64 | time.Duration](xs []T) (lo, hi T) {
	if len(xs) == 0 {
		return lo, hi
	}
	return slices.Min(xs), slices.Max(xs)
}

// Paired is one comparison measured in rounds: per round the baseline's and
// the subject's percentiles over the same interleaved requests, reported
// as medians over the rounds. Added is the subject minus the baseline,
// computed per round and then taken the median of, so a noisy round moves
// both sides together.
type Paired struct {
	Rounds  int
	PerSide int // samples per side per round
	Base    Dist
	Subj    Dist
	Added50 time.Duration
	Added99 time.Duration
	// Spread of the per-round added p50 and p99 (min, max).
	Added50Lo, Added50Hi time.Duration
	Added99Lo, Added99Hi time.Duration
}

// Pair folds rounds of (baseline, subject) samples into a Paired.
func Pair(rounds [][2][]time.Duration) Paired {
	var p Paired
	var b50, b99, s50, s99, a50, a99 []time.Duration
	for _, r := range rounds {
		b, s := DistOf(r[0]), DistOf(r[1])
		if b.N == 0 || s.N == 0 {
			continue
		}
		p.Rounds++
		p.PerSide = min(b.N, s.N)
		b50, b99 = append(b50, b.P50), append(b99, b.P99)
		s50, s99 = append(s50, s.P50), append(s99, s.P99)
		a50, a99 = append(a50, s.P50-b.P50), append(a99, s.P99-b.P99)
	}
	p.Base = Dist{N: p.PerSide, P50: Median(b50), P99: Median(b99)}
	p.Subj = Dist{N: p.PerSide, P50: Median(s50), P99: Median(s99)}
	p.Added50, p.Added99 = Median(a50), Median(a99)
	p.Added50Lo, p.Added50Hi = Span(a50)
	p.Added99Lo, p.Added99Hi = Span(a99)
	return p
}

// Rounds is a plain (unpaired) quantity measured in rounds.
type Rounds struct {
	Dist
	Rounds int
	// P50Lo/P50Hi is the spread of the per-round p50.
	P50Lo, P50Hi time.Duration
}

// Fold folds rounds of samples into per-round percentiles and their medians.
func Fold(rounds [][]time.Duration) Rounds {
	var r Rounds
	var p50, p99 []time.Duration
	for _, ds := range rounds {
		d := DistOf(ds)
		if d.N == 0 {
			continue
		}
		r.Rounds++
		r.N = d.N
		p50, p99 = append(p50, d.P50), append(p99, d.P99)
	}
	r.P50, r.P99 = Median(p50), Median(p99)
	r.P50Lo, r.P50Hi = Span(p50)
	return r
}
