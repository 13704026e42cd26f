package bench

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/arena"
	"github.com/perpetuity/perpetuity/memory/arena/synth"
	"github.com/perpetuity/perpetuity/memory/dict"
)

// ScanResult is section 4 at one size: the exact scan of the resident
// arena against reading the arena's bytes once, under v1 (the fields) and
// under the dense version (V3) over the same text and questions.
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
	Build        time.Duration // adding the corpus to the arena
	// V3 is the same scan of an arena of the dense version (the hybrid
	// scan); nil when it was not measured.
	V3 *ScanSide
}

// ScanSide is one arena's figures at a size.
type ScanSide struct {
	Scan         Rounds
	Floor        time.Duration
	BytesPerItem float64
	CPUPerQuery  time.Duration
	Build        time.Duration
}

// catchUpBatch is how many items the scan section adds to its arenas at a
// time while it grows them through its sizes.
const catchUpBatch = 4096

// V3Ratio is the dense version's scan p50 over v1's (0 without it).
func (s ScanResult) V3Ratio() float64 {
	if s.V3 == nil || s.Scan.P50 <= 0 {
		return 0
	}
	return float64(s.V3.Scan.P50) / float64(s.Scan.P50)
}

// ScanK is how many hits a frame asks the scan for (the engine's default
// Candidates).
const ScanK = 120

// scanArena is one side of the scan section: an arena of one version grown
// through the corpus's prefixes, and the queries it answers.
type scanArena struct {
	terms  memory.DictTerms
	space  *dict.Space
	ar     *arena.Arena
	qs     []arena.Query
	floors []time.Duration
	rounds [][]time.Duration
	cpu    time.Duration
	build  time.Duration
}

// runScan measures v1 and the dense version at each size, growing one
// arena of each through the corpus's prefixes. Each question is asked of
// both arenas back to back, in alternating order, so a busy neighbour slows
// both alike.
func runScan(ctx context.Context, k *kit, g *synth.Generator, corpus []arena.Item, sizes []int, cfg Config, lg *logger) ([]ScanResult, error) {
	var sides []*scanArena
	for _, v := range []int{k.dict.Version, k.dense.D.Version} {
		terms, sp, err := k.terms(v)
		if err != nil {
			return nil, err
		}
		sides = append(sides, &scanArena{terms: terms, space: sp, ar: arena.New(arenaOptions(sp))})
	}
	loaded := 0
	var out []ScanResult
	for _, n := range sizes {
		if n > len(corpus) {
			n = len(corpus)
		}
		lg.printf("scan %s: deriving v1 and v%d arenas", itemsLabel(n), k.dense.D.Version)
		for _, s := range sides {
			s.build, s.floors, s.rounds, s.cpu = 0, nil, nil, 0
		}
		for loaded < n {
			end := min(loaded+catchUpBatch, n)
			batches := k.arenaItems(corpus[loaded:end], sides)
			for j, s := range sides {
				t0 := time.Now()
				s.ar.Add(batches[j]...)
				s.build += time.Since(t0)
			}
			loaded = end
		}
		qs := g.Queries(corpus[:n], cfg.ScanQueries, 3, 8)
		for _, s := range sides {
			s.qs = make([]arena.Query, len(qs))
			for i, q := range qs {
				s.qs[i] = arenaQuery(k.vocab.Question(q), q.Users, ScanK, s.terms, s.space)
			}
		}
		workers := runtime.GOMAXPROCS(0)
		for round := range cfg.Rounds {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			lg.printf("scan %s: round %d/%d", itemsLabel(n), round+1, cfg.Rounds)
			for _, s := range sides {
				s.floors = append(s.floors, BandwidthFloor(s.ar.Stats().BytesResident, workers))
				s.rounds = append(s.rounds, make([]time.Duration, len(qs)))
			}
			for i := range qs {
				for j := range sides {
					s := sides[(i+round+j)%len(sides)]
					c0, t := cpuTime(), time.Now()
					s.ar.Search(s.qs[i])
					s.rounds[round][i] = time.Since(t)
					s.cpu += cpuTime() - c0
				}
			}
		}
		side := func(s *scanArena) ScanSide {
			return ScanSide{Scan: Fold(s.rounds), Floor: Median(s.floors), BytesPerItem: s.ar.Stats().BytesPerItem,
				CPUPerQuery: s.cpu / time.Duration(max(1, len(qs)*cfg.Rounds)), Build: s.build}
		}
		v1, v3 := side(sides[0]), side(sides[1])
		out = append(out, ScanResult{Items: n, K: ScanK, Queries: len(qs), Workers: workers,
			Scan: v1.Scan, Floor: v1.Floor, BytesPerItem: v1.BytesPerItem, CPUPerQuery: v1.CPUPerQuery, Build: v1.Build, V3: &v3})
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
