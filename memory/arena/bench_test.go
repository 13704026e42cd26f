package arena_test

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/arena"
	"github.com/perpetuity/perpetuity/memory/arena/synth"
)

// benchCorpus is a 10-user Zipfian tenant with its queries (3-8 terms, K=50).
type benchCorpus struct {
	ar      *arena.Arena
	queries []arena.Query
	build   time.Duration
}

func newBenchCorpus(b *testing.B, items int) *benchCorpus {
	b.Helper()
	start := time.Now()
	g := synth.New(synth.Config{Seed: 42, Items: items, Users: 10})
	corpus := g.Corpus()
	ar := arena.New(arena.Options{})
	const batch = 4096
	for i := 0; i < len(corpus); i += batch {
		ar.Add(corpus[i:min(i+batch, len(corpus))]...)
	}
	qs := g.Queries(corpus, 200, 3, 8)
	return &benchCorpus{ar: ar, queries: qs, build: time.Since(start)}
}

// BenchmarkSearch runs synthetic queries (3-8 terms, K=50) against a 10-user
// Zipfian tenant, each asked by one user (visible=all: by the whole pool).
// It reports scan p50/p99/min per query, CPU time per query (robust when
// the machine is shared), bytes per item, what the stages did, and, in the
// same run, the time to read the arena's resident bytes once sequentially
// with as many goroutines as the scan uses (the bandwidth floor).
func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{250_000, 1_000_000} {
		var bc *benchCorpus
		for _, all := range []bool{false, true} {
			sub := itemsName(n)
			if all {
				sub += "/visible=all"
			}
			b.Run(sub, func(b *testing.B) {
				if bc == nil {
					bc = newBenchCorpus(b, n)
				}
				runSearchBench(b, bc, all)
			})
		}
	}
}

func itemsName(n int) string {
	if n >= 1_000_000 && n%1_000_000 == 0 {
		return fmt.Sprintf("items=%dM", n/1_000_000)
	}
	return fmt.Sprintf("items=%dk", n/1000)
}

func runSearchBench(b *testing.B, bc *benchCorpus, all bool) {
	st := bc.ar.Stats()
	durs := make([]time.Duration, 0, b.N)
	var cands, rescored, fallbacks, bounded int
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		q := bc.queries[i%len(bc.queries)]
		q.AllUsers = all
		t := time.Now()
		_, ss := bc.ar.SearchWithStats(q)
		durs = append(durs, time.Since(t))
		cands += ss.Candidates
		bounded += ss.Bounded
		rescored += ss.Rescored
		if ss.Fallback {
			fallbacks++
		}
	}
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	b.ReportMetric(float64(cpu)/1e6/float64(len(durs)), "cpu-ms/op")
	slices.Sort(durs)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	floor := bandwidthFloor(st.BytesResident, runtime.GOMAXPROCS(0))
	p50 := durs[len(durs)/2]
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(durs[0]), "min-ms")
	b.ReportMetric(ms(durs[min(len(durs)-1, len(durs)*99/100)]), "p99-ms")
	b.ReportMetric(st.BytesPerItem, "bytes/item")
	b.ReportMetric(ms(floor), "floor-ms")
	b.ReportMetric(float64(p50)/float64(floor), "p50/floor")
	b.ReportMetric(float64(cands)/float64(len(durs)), "cands/op")
	b.ReportMetric(float64(bounded)/float64(len(durs)), "bounded/op")
	b.ReportMetric(float64(rescored)/float64(len(durs)), "rescored/op")
	b.ReportMetric(float64(fallbacks)/float64(len(durs)), "fallback/op")
	b.ReportMetric(bc.build.Seconds(), "build-s")
}

// bandwidthFloor is the median time of 5 sequential reads of size bytes
// split over workers goroutines.
func bandwidthFloor(size, workers int) time.Duration {
	buf := make([]uint64, size/8)
	for i := range buf {
		buf[i] = uint64(i)
	}
	var ds []time.Duration
	for range 5 {
		t := time.Now()
		readParallel(buf, workers)
		ds = append(ds, time.Since(t))
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func readParallel(buf []uint64, workers int) uint64 {
	sums := make([]uint64, workers)
	var wg sync.WaitGroup
	per := (len(buf) + workers - 1) / workers
	for w := range workers {
		part := buf[min(w*per, len(buf)):min((w+1)*per, len(buf))]
		wg.Go(func() {
			var s0, s1, s2, s3 uint64
			for i := 0; i+4 <= len(part); i += 4 {
				s0 += part[i]
				s1 += part[i+1]
				s2 += part[i+2]
				s3 += part[i+3]
			}
			sums[w] = s0 + s1 + s2 + s3
		})
	}
	wg.Wait()
	var s uint64
	for _, x := range sums {
		s += x
	}
	return s
}

// BenchmarkMemoryBandwidth reads a byte slice as large as the arena's
// resident bytes at 250k and 1M items (bytes per item measured on a 20k
// sample of the same corpus), with GOMAXPROCS goroutines.
func BenchmarkMemoryBandwidth(b *testing.B) {
	sample := newBenchCorpus(b, 20_000).ar.Stats().BytesPerItem
	for _, n := range []int{250_000, 1_000_000} {
		b.Run(itemsName(n), func(b *testing.B) {
			size := int(sample * float64(n))
			buf := make([]uint64, size/8)
			for i := range buf {
				buf[i] = uint64(i)
			}
			b.SetBytes(int64(size))
			b.ResetTimer()
			for b.Loop() {
				readParallel(buf, runtime.GOMAXPROCS(0))
			}
		})
	}
}
