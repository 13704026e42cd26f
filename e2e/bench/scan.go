package bench

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/perpetuity/perpetuity/memory/arena"
	"github.com/perpetuity/perpetuity/memory/arena/synth"
)

// ScanResult is section 4 at one size: the exact two-stage scan of the
// resident arena against reading the arena's bytes once.
type ScanResult struct {
	Items   int
	K       int
	Queries int
	Workers int
	Scan    Rounds
	// Floor is the time to read the arena's resident bytes once,
	// sequentially, with as many goroutines as the scan uses (median).
	Floor        time.Duration
	BytesPerItem float64
	CPUPerQuery  time.Duration // process CPU time per query (robust to a busy neighbour)
	Build        time.Duration // building the arena from the corpus
}

// ScanK is how many hits a frame asks the scan for (the engine's default
// Candidates).
const ScanK = 120

// runScan measures the arena at each size, growing one arena through the
// corpus's prefixes.
func runScan(ctx context.Context, g *synth.Generator, corpus []arena.Item, sizes []int, cfg Config, lg *logger) ([]ScanResult, error) {
	ar := arena.New(arena.Options{})
	loaded := 0
	var out []ScanResult
	for _, n := range sizes {
		if n > len(corpus) {
			n = len(corpus)
		}
		t0 := time.Now()
		for loaded < n {
			end := min(loaded+catchUpBatch, n)
			ar.Add(corpus[loaded:end]...)
			loaded = end
		}
		res := ScanResult{Items: n, K: ScanK, Workers: runtime.GOMAXPROCS(0), Build: time.Since(t0)}
		qs := g.Queries(corpus[:n], cfg.ScanQueries, 3, 8)
		for i := range qs {
			qs[i].K = ScanK
		}
		st := ar.Stats()
		res.BytesPerItem, res.Queries = st.BytesPerItem, len(qs)
		var rounds [][]time.Duration
		var floors []time.Duration
		var cpu time.Duration
		for round := range cfg.Rounds {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			lg.printf("scan %s: round %d/%d", itemsLabel(n), round+1, cfg.Rounds)
			floors = append(floors, BandwidthFloor(st.BytesResident, res.Workers))
			c0 := cpuTime()
			ds := make([]time.Duration, len(qs))
			for i, q := range qs {
				t := time.Now()
				ar.Search(q)
				ds[i] = time.Since(t)
			}
			cpu += cpuTime() - c0
			rounds = append(rounds, ds)
		}
		res.Scan = Fold(rounds)
		res.Floor = Median(floors)
		res.CPUPerQuery = cpu / time.Duration(max(1, len(qs)*cfg.Rounds))
		out = append(out, res)
	}
	return out, nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BandwidthFloor is the median of five sequential reads of size bytes split
// over workers goroutines: no scan of that many bytes can be faster.
func BandwidthFloor(size, workers int) time.Duration {
	buf := make([]uint64, max(1, size/8))
	for i := range buf {
		buf[i] = uint64(i)
	}
	ds := make([]time.Duration, 5)
	for i := range ds {
		t := time.Now()
		readParallel(buf, workers)
		ds[i] = time.Since(t)
	}
	slices.Sort(ds)
	return ds[2]
}

func readParallel(buf []uint64, workers int) uint64 {
	sums := make([]uint64, workers)
	var wg sync.WaitGroup
	per := (len(buf) + workers - 1) / workers
	for w := range workers {
		part := buf[min(w*per, len(buf)):min((w+1)*per, len(buf))]
		wg.Go(func() {
			var s0, s1, s2, s3 uint64
			i := 0
			for ; i+4 <= len(part); i += 4 {
				s0 += part[i]
				s1 += part[i+1]
				s2 += part[i+2]
				s3 += part[i+3]
			}
			for ; i < len(part); i++ {
				s0 += part[i]
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
