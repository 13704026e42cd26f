package bench

import (
	"fmt"
	"slices"
	"time"
)

// Sections, in the order they run and are written.
const (
	SecProxy      = "proxy"      // 1. pass-through overhead
	SecPipeline   = "pipeline"   // 2. full pipeline overhead
	SecMemPath    = "mempath"    // 2. the memory path alone (capture + frame, no HTTP)
	SecCost       = "cost"       // 2b. the cost curve: memory path, arena and throughput by tenant size
	SecCapture    = "capture"    // 3. capture cost and import
	SecScan       = "scan"       // 4. scan against the bandwidth floor
	SecCold       = "coldstart"  // 5. cold start
	SecThroughput = "throughput" // 6. sustained throughput
	SecRecall     = "recall"     // 7. recall for tokens
	SecChain      = "chain"      // 8. the chain graph's writer: catch-up and restart at the largest size
)

// AllSections lists every section.
func AllSections() []string {
	return []string{SecProxy, SecPipeline, SecMemPath, SecCost, SecCapture, SecScan, SecCold, SecThroughput, SecRecall, SecChain}
}

// Config sizes a run. Mode presets (ModeConfig) fill every field.
type Config struct {
	Mode     string
	Sections []string

	Rounds int    // rounds of every repeated measurement
	Seed   uint64 // of the synthetic corpus

	// Section 1.
	PassPairs     int // pairs per round at concurrency 1
	Concurrency   int // the "many" concurrency
	PassPairsMany int // pairs per worker per round at Concurrency
	StreamPairs   int // streamed pairs per round
	// StreamConcurrency streams at once: paced streams mostly wait, so a
	// few at a time give a real p99 in the same time.
	StreamConcurrency int
	Chunks            int
	ChunkDelay        time.Duration
	BreakdownN        int // samples per round of each database statement
	// Peer measures the Portkey gateway (peer.go) beside Perpetuity, with
	// the same requests and counts; it needs node and npm.
	Peer bool

	// Sections 2, 5 and 6: tenant sizes, grown in this order.
	Sizes         []int
	PipelinePairs int
	// MemPathTurns is the memory path's turns of each tenant per round:
	// at least 100, so that a round's p99 (nearest rank) is not simply its
	// slowest turn.
	MemPathTurns   int
	ColdRounds     int
	ThroughputSize int // which size section 6 runs at
	Bound          time.Duration
	RateStep       time.Duration
	RateStart      float64
	RateLimit      float64 // the search stops doubling here
	Bisect         int
	// DenseSizes are the sizes of Sizes at which a second tenant, the
	// same items on dictionary v3, is measured beside the first (memory
	// path and cold start).
	DenseSizes []int
	// PoolUsers memory users holding PoolItems items in one tenant, each
	// question asked as one of them: the memory path of a pooled tenant,
	// v1 and v3 (issue 16 item 5). PoolUsers 0 skips it.
	PoolUsers, PoolItems int

	// Section 2b, the cost curve: the memory path and the arena at
	// CostSizes (the bench tenant grows through them with Sizes), and the
	// full pipeline's closed-loop throughput at each of CostConcurrency
	// for CostStep per round.
	CostSizes       []int
	CostConcurrency []int
	CostStep        time.Duration

	// Section 3.
	CaptureN    int
	ImportTurns int

	// Section 4.
	ScanSizes   []int
	ScanQueries int

	// Section 7: the LoCoMo file ("" skips it).
	LocomoFile string
}

// ModeConfig is a preset: "full" (make bench: minutes), "quick"
// (BENCH_QUICK=1: under a minute, only the 10k tenant) and "smoke" (tests:
// tiny sizes, seconds; the figures mean nothing).
func ModeConfig(mode string) (Config, error) {
	c := Config{
		Mode: mode, Sections: AllSections(), Seed: 42,
		Rounds: 5, PassPairs: 400, Concurrency: 64, PassPairsMany: 16, StreamPairs: 200, StreamConcurrency: 4,
		Chunks: 64, ChunkDelay: time.Millisecond, BreakdownN: 100, Peer: true,
		Sizes: []int{10_000, 250_000, 1_000_000}, PipelinePairs: 60, MemPathTurns: 200, ColdRounds: 3,
		DenseSizes: []int{10_000, 250_000}, PoolUsers: 500, PoolItems: 250_000,
		CostSizes: []int{10_000, 100_000, 250_000, 1_000_000}, CostConcurrency: []int{1, 8, 64}, CostStep: 2 * time.Second,
		ThroughputSize: 250_000, Bound: 50 * time.Millisecond, RateStep: 3 * time.Second, RateStart: 10, RateLimit: 4000, Bisect: 3,
		CaptureN: 200, ImportTurns: 2000,
		ScanSizes: []int{250_000, 1_000_000}, ScanQueries: 200,
	}
	switch mode {
	case "full":
	case "quick":
		c.Rounds, c.PassPairs, c.PassPairsMany, c.StreamPairs, c.BreakdownN = 3, 150, 4, 40, 40
		c.Sizes, c.ThroughputSize, c.PipelinePairs, c.ColdRounds = []int{10_000}, 10_000, 30, 2
		c.MemPathTurns = 100
		c.DenseSizes, c.PoolItems = []int{10_000}, 10_000
		c.CostSizes, c.CostStep = []int{10_000, 50_000}, 700*time.Millisecond
		c.RateStep, c.Bisect = 700*time.Millisecond, 1
		c.CaptureN, c.ImportTurns = 60, 300
		c.ScanSizes, c.ScanQueries = []int{10_000}, 100
		c.Sections = slices.DeleteFunc(c.Sections, func(s string) bool { return s == SecRecall })
	case "smoke":
		c.Rounds, c.PassPairs, c.Concurrency, c.PassPairsMany, c.StreamPairs, c.BreakdownN = 2, 10, 4, 2, 2, 5
		c.Chunks, c.Peer = 8, false // the tests need no npm
		c.CostSizes, c.CostStep = []int{300, 600}, 100*time.Millisecond
		c.Sizes, c.ThroughputSize, c.PipelinePairs, c.ColdRounds = []int{300}, 300, 4, 1
		c.MemPathTurns = 4
		c.DenseSizes, c.PoolUsers, c.PoolItems = []int{300}, 20, 400
		c.RateStep, c.RateStart, c.RateLimit, c.Bisect, c.Bound = 150*time.Millisecond, 50, 100, 0, 2*time.Second
		c.CaptureN, c.ImportTurns = 5, 10
		c.ScanSizes, c.ScanQueries = []int{300, 600}, 10
		c.Sections = slices.DeleteFunc(c.Sections, func(s string) bool { return s == SecRecall })
	default:
		return c, fmt.Errorf("bench mode %q: want full, quick or smoke", mode)
	}
	return c, nil
}

func (c Config) has(s string) bool { return slices.Contains(c.Sections, s) }

// questions is how many live questions a size draws: enough that the
// memory path, which asks the most, asks none twice (its first turn,
// which catches the arena up, comes on top of its rounds).
func (c Config) questions() int { return max(200, c.Rounds*(c.MemPathTurns+c.aloneTurns())+1) }

// aloneTurns is how many captures alone the memory path makes per round
// beside its turns (MemPathResult.Alone).
func (c Config) aloneTurns() int { return max(2, c.MemPathTurns/5) }

// pipelineWarmUp is how many requests a pipeline side sends before its rounds.
const pipelineWarmUp = 20

// pipelineAsks is how many of the size's questions one pipeline side asks:
// its first request and warm-up, then its rounds. Two sides on one tenant
// take one half of the questions each (pipeSide.ask).
func (c Config) pipelineAsks() int { return pipelineWarmUp + c.Rounds*c.PipelinePairs }
