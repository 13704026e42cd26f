package bench

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/arena"
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/store"
)

// ColdResult is section 5 at one tenant size: a process with no arena
// loading the whole tenant from PostgreSQL.
type ColdResult struct {
	Items  int
	Dict   int // the tenant's dictionary version
	Rounds int
	// Took is the catch-up (read + build) of a tenant whose arena segments
	// an earlier load wrote, as a restarted process loads it: median over
	// rounds; Lo/Hi the spread.
	Took, TookLo, TookHi time.Duration
	Read, Build          time.Duration // its two parts, medians
	PerSec               float64       // items per second at the median
	// First is the same from rows alone (no segments yet: a tenant's first
	// load ever), median; FirstRead its read.
	First, FirstRead time.Duration
	FirstPerSec      float64
	// Segments is how many segments the first load's read was cut into,
	// SegmentWrite the time to write them (in serving, in the background
	// after that load), SegmentBytes their payloads' size.
	Segments     int
	SegmentWrite time.Duration
	SegmentBytes int64
	// BytesPerItem is the arena's own accounting; HeapPerItem the Go heap
	// it holds after a collection, per item.
	BytesPerItem float64
	HeapPerItem  float64
	// EngineFirst is the first frame of a fresh engine (its catch-up plus
	// one frame); EngineWarm a frame once caught up: their difference is
	// the catch-up through the engine's own path.
	EngineFirst, EngineWarm time.Duration
	// EngineReload is a frame of a tenant evicted under an arena budget
	// (an engine whose budget holds nothing: every frame reloads), the
	// process's one-time costs paid before; ReloadLoad is its load alone
	// (memory.ResidentStats.LoadTime). Zero above reloadMaxItems.
	EngineReload, ReloadLoad time.Duration
}

// reloadMaxItems bounds the sizes the reload is measured at: it costs a
// second and third load of the tenant, a dozen seconds at 1M.
const reloadMaxItems = 250_000

func runColdStart(ctx context.Context, db *store.DB, k *kit, t *Tenant, q string, cfg Config, lg *logger) (*ColdResult, error) {
	res := &ColdResult{Items: t.Items, Dict: t.Dict}
	_, vecSpace, err := k.terms(t.Dict)
	if err != nil {
		return nil, err
	}
	// A tenant's first load reads rows alone; the segments it leaves make
	// every later one (a restart, a reload after eviction) read them.
	if err := db.DropSegments(ctx, t.ID); err != nil {
		return nil, err
	}
	space := func(component []byte) (*dict.Space, error) {
		if vecSpace == nil {
			return nil, nil
		}
		return dict.NewSpace(vecSpace.V, component)
	}
	first, err := coldRounds(ctx, db, t, space, cfg, lg, "from rows")
	if err != nil {
		return nil, err
	}
	res.First, res.FirstRead = first.took, first.read
	res.FirstPerSec = float64(t.Items) / res.First.Seconds()
	// The arena's size and heap as the rows pass built it: the segment
	// pass's heap also holds the connection's read buffer, grown to a
	// segment (about 1 MB, a hundred bytes an item at 10k).
	res.BytesPerItem, res.HeapPerItem = first.bytesPerItem, first.heapPerItem
	segLast, err := writeSegments(ctx, db, t.ID, res)
	if err != nil {
		return nil, err
	}
	seg, err := coldRounds(ctx, db, t, space, cfg, lg, "from segments")
	if err != nil {
		return nil, err
	}
	if seg.segmented != segLast {
		return nil, fmt.Errorf("cold start from segments: the load read segments up to %d, %d were written up to %d", seg.segmented, res.Segments, segLast)
	}
	res.Rounds = len(seg.tooks)
	res.Took, res.Read, res.Build = seg.took, seg.read, seg.build
	res.TookLo, res.TookHi = Span(seg.tooks)
	res.PerSec = float64(t.Items) / res.Took.Seconds()

	// The same through a fresh engine, which is what a new serving process does.
	eng := k.engine()
	fq := memory.FrameQuery{Who: memory.Who{TenantID: t.ID, UserID: t.Users[0], UserName: "u1", ConversationID: t.Conversation(1)},
		Live: q, Probe: true}
	t0 := time.Now()
	if _, err := eng.Frame(ctx, fq); err != nil {
		return nil, fmt.Errorf("cold frame: %w", err)
	}
	res.EngineFirst = time.Since(t0)
	var warm []time.Duration
	for range 5 {
		t0 := time.Now()
		if _, err := eng.Frame(ctx, fq); err != nil {
			return nil, fmt.Errorf("warm frame: %w", err)
		}
		warm = append(warm, time.Since(t0))
	}
	res.EngineWarm = Median(warm)
	if t.Items <= reloadMaxItems {
		if res.EngineReload, res.ReloadLoad, err = reloadFrame(ctx, k, fq); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// writeSegments cuts a cold load's read into segments and writes them, as
// serving does in the background after a load from rows, and returns where
// they end (0: none).
func writeSegments(ctx context.Context, db *store.DB, tenantID int64, res *ColdResult) (int64, error) {
	cu, err := db.ReadCatchUp(ctx, tenantID, 0, res.Dict)
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	segs := store.CutSegments(cu.Items, cu.Segmented, cu.Head.Seq, store.SegmentItems)
	n, err := db.WriteSegments(ctx, tenantID, cu.Head.DictVersion, cu.Head.Seq, segs)
	if err != nil {
		return 0, err
	}
	res.SegmentWrite, res.Segments = time.Since(t0), n
	for _, s := range segs[:n] {
		res.SegmentBytes += int64(len(s.Payload))
	}
	if n == 0 {
		return 0, nil
	}
	return segs[n-1].LastSeq, nil
}

// coldPass is one way of loading, measured over rounds.
type coldPass struct {
	tooks                     []time.Duration
	took, read, build         time.Duration // medians
	bytesPerItem, heapPerItem float64
	segmented                 int64 // where the last round's segments ended
}

func coldRounds(ctx context.Context, db *store.DB, t *Tenant, space func([]byte) (*dict.Space, error), cfg Config, lg *logger, how string) (coldPass, error) {
	var res coldPass
	var read, build []time.Duration
	for round := range cfg.ColdRounds {
		lg.printf("cold start %s %s: round %d/%d", itemsLabel(t.Items), how, round+1, cfg.ColdRounds)
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		t0 := time.Now()
		cu, err := db.ReadCatchUp(ctx, t.ID, 0, t.Dict)
		if err != nil {
			return res, err
		}
		t1 := time.Now()
		// As the resident catch-up loads a tenant from scratch
		// (memory/resident.go): the space of the version and the tenant's
		// frozen component, an arena sized for its vectors, the product's
		// conversion of each row.
		sp, err := space(cu.Component)
		if err != nil {
			return res, fmt.Errorf("cold start: %w", err)
		}
		ar := arena.New(arenaOptions(sp))
		batch := memory.ToArenaItems(cu.Items, sp)
		ar.Add(batch...)
		t2 := time.Now()
		if got := ar.Len(); got < t.Items {
			return res, fmt.Errorf("cold start %s: the arena holds %d items, the tenant %d", how, got, t.Items)
		}
		res.segmented = cu.Segmented
		cu, batch = store.CatchUp{}, nil
		runtime.GC()
		runtime.ReadMemStats(&m1)
		st := ar.Stats()
		res.bytesPerItem = st.BytesPerItem
		res.heapPerItem = float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)) / float64(st.Items)
		runtime.KeepAlive(ar)
		res.tooks, read, build = append(res.tooks, t2.Sub(t0)), append(read, t1.Sub(t0)), append(build, t2.Sub(t1))
	}
	res.took, res.read, res.build = Median(res.tooks), Median(read), Median(build)
	return res, nil
}

// reloadFrame is a frame of an evicted tenant: an engine under a budget of
// one byte evicts every arena once its frame is done, so its second frame
// reloads the tenant as serve does after an eviction (the first pays the
// process's one-time costs, such as a dictionary's first load).
func reloadFrame(ctx context.Context, k *kit, fq memory.FrameQuery) (frame, load time.Duration, err error) {
	eng := k.engineBudget(1)
	if _, err := eng.Frame(ctx, fq); err != nil {
		return 0, 0, fmt.Errorf("reload: %w", err)
	}
	before := eng.Resident()
	if before.Tenants != 0 {
		return 0, 0, fmt.Errorf("reload: the budget left %d arenas resident", before.Tenants)
	}
	t0 := time.Now()
	if _, err := eng.Frame(ctx, fq); err != nil {
		return 0, 0, fmt.Errorf("reload: %w", err)
	}
	frame = time.Since(t0)
	after := eng.Resident()
	if after.Loads != before.Loads+1 {
		return 0, 0, fmt.Errorf("reload: %d loads for one frame of an evicted tenant", after.Loads-before.Loads)
	}
	return frame, after.LoadTime - before.LoadTime, nil
}
