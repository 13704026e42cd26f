package memory

import (
	"context"
	"errors"
	"testing"
	"time"
)

// queued waits until tenant has n scans waiting in g.
func queued(t *testing.T, g *scanGate, tenant int64, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		g.mu.Lock()
		got := len(g.waiting[tenant])
		g.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("tenant %d: %d scans waiting, want %d", tenant, got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

type grant struct {
	tenant int64
	seq    int
	n      int
}

// enqueue starts a scan of tenant that waits in g, and returns where its
// grant will be reported.
func enqueue(t *testing.T, g *scanGate, tenant int64, seq, want int, out chan<- grant) {
	t.Helper()
	g.mu.Lock()
	before := len(g.waiting[tenant])
	g.mu.Unlock()
	go func() {
		n, err := g.acquire(context.Background(), tenant, want)
		if err != nil {
			n = -1
		}
		out <- grant{tenant, seq, n}
	}()
	queued(t, g, tenant, before+1)
}

// A tenant flooding the gate holds its share and no more: another tenant's
// scan is admitted at once, with the workers left, while the flood waits.
func TestGateFloodKeepsItsShare(t *testing.T) {
	t.Parallel()
	g := newScanGate(3, 2, 100, time.Hour)
	ctx := context.Background()
	const flood, other = 1, 2
	n, err := g.acquire(ctx, flood, 2)
	if err != nil || n != 2 {
		t.Fatalf("first scan: %d slots, %v", n, err)
	}
	got := make(chan grant, 20)
	for i := range 10 {
		enqueue(t, g, flood, i, 2, got)
	}
	n, err = g.acquire(ctx, other, 2)
	if err != nil || n != 1 {
		t.Fatalf("the other tenant's scan beside a flood of 10: %d slots, %v; want the 1 left, at once", n, err)
	}
	select {
	case gr := <-got:
		t.Fatalf("a flood scan was admitted beyond the tenant's share: %+v", gr)
	default:
	}
	// The flood's scans go one at a time, in order, as its slots come back.
	g.release(other, 1)
	for i := range 10 {
		g.release(flood, 2)
		gr := <-got
		if gr.tenant != flood || gr.seq != i || gr.n != 2 {
			t.Fatalf("grant %d: %+v, want flood scan %d with 2 slots", i, gr, i)
		}
	}
	g.release(flood, 2)
	if g.free != g.total || len(g.held) != 0 || len(g.ring) != 0 {
		t.Fatalf("gate not back to idle: free %d of %d, held %v, ring %v", g.free, g.total, g.held, g.ring)
	}
}

// When the process is full, waiting scans are admitted tenant by tenant in
// turn: the quiet tenant's scan comes second, not after the flood's queue.
func TestGateAdmitsTenantsInTurn(t *testing.T) {
	t.Parallel()
	// Every scan wants the whole process, so each release admits one.
	g := newScanGate(2, 2, 100, time.Hour)
	ctx := context.Background()
	const flood, quiet, third = 1, 2, 3
	if n, err := g.acquire(ctx, flood, 2); err != nil || n != 2 {
		t.Fatalf("first scan: %d, %v", n, err)
	}
	got := make(chan grant, 20)
	for i := range 5 {
		enqueue(t, g, flood, i, 2, got)
	}
	enqueue(t, g, quiet, 0, 2, got)
	enqueue(t, g, third, 0, 2, got)
	enqueue(t, g, quiet, 1, 2, got)

	var order []grant
	g.release(flood, 2)
	for range 8 {
		gr := <-got
		order = append(order, gr)
		g.release(gr.tenant, gr.n)
	}
	want := []grant{{flood, 0, 2}, {quiet, 0, 2}, {third, 0, 2}, {flood, 1, 2}, {quiet, 1, 2}, {flood, 2, 2}, {flood, 3, 2}, {flood, 4, 2}}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("admission order %v, want %v", order, want)
		}
	}
}

// A scan that cannot get a slot in time is refused busy; a tenant with too
// many scans waiting is refused at once; a cancelled request stops waiting.
// None of them keeps a slot.
func TestGateRefusesBusy(t *testing.T) {
	t.Parallel()
	g := newScanGate(1, 1, 2, 50*time.Millisecond)
	ctx := context.Background()
	if _, err := g.acquire(ctx, 1, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := g.acquire(ctx, 2, 1); !errors.Is(err, ErrBusy) {
		t.Fatalf("waited past the limit: %v, want ErrBusy", err)
	}
	got := make(chan grant, 4)
	g.wait = time.Hour
	enqueue(t, g, 1, 0, 1, got)
	enqueue(t, g, 1, 1, 1, got)
	if _, err := g.acquire(ctx, 1, 1); !errors.Is(err, ErrBusy) {
		t.Fatalf("third scan waiting for one tenant: %v, want ErrBusy at once", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := g.acquire(cctx, 2, 1); done <- err }()
	queued(t, g, 2, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	g.release(1, 1)
	for range 2 {
		gr := <-got
		g.release(gr.tenant, gr.n)
	}
	if g.free != 1 || len(g.held) != 0 || len(g.ring) != 0 || len(g.waiting) != 0 {
		t.Fatalf("gate not idle: free %d, held %v, ring %v, waiting %v", g.free, g.held, g.ring, g.waiting)
	}
}
