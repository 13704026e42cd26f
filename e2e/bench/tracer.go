package bench

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/memory/store"
)

// stmtTracer sums, per statement, the time from sending it to its result,
// as the client sees it (a pgx tracer): where a transaction's time goes.
// A pipelined batch is one round trip, so it counts as one statement,
// named by what it carries ("batch: select tenant_heads, select items").
type stmtTracer struct {
	mu    sync.Mutex
	sum   map[string]time.Duration
	count map[string]int
	order []string
	// names memoizes stmtName by statement text: the tracer runs inside
	// the timed operations, and naming a statement afresh (lower-casing
	// and splitting its text) cost a capture of fourteen statements about
	// 60 µs of the time it measured.
	names sync.Map // SQL -> name
	// spans, while keep is set, is every round trip since the last take,
	// for the memory path's per-turn traces (tail.go).
	keep  bool
	spans []span
	// paused: round trips are not counted (the memory path's captures
	// alone, which are not turns).
	paused bool
}

type traceStart struct{}

type started struct {
	at    time.Time
	name  string
	batch *[]string // statement names of a batch, filled as they are queued
}

func newStmtTracer() *stmtTracer {
	return &stmtTracer{sum: map[string]time.Duration{}, count: map[string]int{}}
}

func (t *stmtTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, traceStart{}, started{at: time.Now(), name: t.name(d.SQL)})
}

func (t *stmtTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	t.add(ctx)
}

func (t *stmtTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return context.WithValue(ctx, traceStart{}, started{at: time.Now(), name: "batch", batch: new([]string)})
}

func (t *stmtTracer) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	s, ok := ctx.Value(traceStart{}).(started)
	if !ok || s.batch == nil {
		return
	}
	switch n := t.name(d.SQL); n {
	case "begin", "commit", "set tenant":
	default:
		if !slices.Contains(*s.batch, n) {
			*s.batch = append(*s.batch, n)
		}
	}
}

func (t *stmtTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	t.add(ctx)
}

func (t *stmtTracer) add(ctx context.Context) {
	s, ok := ctx.Value(traceStart{}).(started)
	if !ok {
		return
	}
	end := time.Now()
	d, name := end.Sub(s.at), s.name
	if s.batch != nil && len(*s.batch) > 0 {
		name = "batch: " + strings.Join(*s.batch, ", ")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.paused {
		return
	}
	if t.keep {
		t.spans = append(t.spans, span{name: name, start: s.at, end: end})
	}
	if _, seen := t.sum[name]; !seen {
		t.order = append(t.order, name)
	}
	t.sum[name] += d
	t.count[name]++
}

func (t *stmtTracer) name(sql string) string {
	if n, ok := t.names.Load(sql); ok {
		return n.(string)
	}
	n := stmtName(sql)
	t.names.Store(sql, n)
	return n
}

func (t *stmtTracer) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.sum)
	clear(t.count)
	t.order = nil
	t.spans = t.spans[:0]
}

// pause stops counting round trips (p) or starts again.
func (t *stmtTracer) pause(p bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.paused = p
}

// keepSpans starts keeping each round trip's span (take returns them).
func (t *stmtTracer) keepSpans() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.keep = true
}

// take returns the spans kept since the last take and forgets them.
func (t *stmtTracer) take() []span {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.spans
	t.spans = nil
	return out
}

// Stmt is one statement kind's share of a repeated operation.
type Stmt struct {
	Name  string
	Each  time.Duration // mean time per operation
	Count float64       // times per operation
}

// per returns each statement's mean time per operation (ops operations),
// in first-seen order.
func (t *stmtTracer) per(ops int) []Stmt {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Stmt, 0, len(t.order))
	for _, n := range t.order {
		out = append(out, Stmt{Name: n, Each: t.sum[n] / time.Duration(ops), Count: float64(t.count[n]) / float64(ops)})
	}
	return slices.Clip(out)
}

// stmtName names a statement by its verb and tables: "insert messages",
// "update tenant_heads", "select items+retrieval_rows", "begin". A select
// with subqueries says so, to tell it from a plain one on the same table.
func stmtName(sql string) string {
	f := strings.Fields(strings.ToLower(strings.NewReplacer("(", " ( ", ")", " ) ", ",", " , ").Replace(sql)))
	if len(f) == 0 {
		return "other"
	}
	next := func(word string) string {
		for i := 0; i+1 < len(f); i++ {
			if f[i] == word {
				return f[i+1]
			}
		}
		return ""
	}
	switch f[0] {
	case "insert":
		return "insert " + next("into")
	case "update":
		return "update " + next("update")
	case "delete":
		return "delete " + next("from")
	case "with":
		for _, w := range []string{"insert", "update", "delete"} {
			if slices.Contains(f, w) {
				return "with … " + stmtName(strings.Join(f[slices.Index(f, w):], " "))
			}
		}
		return "with …"
	case "select":
		if slices.Contains(f, "set_config") {
			return "set tenant"
		}
		var tables []string
		for i := 0; i+1 < len(f); i++ {
			if (f[i] == "from" || f[i] == "join") && f[i+1] != "(" && !slices.Contains(tables, f[i+1]) {
				tables = append(tables, f[i+1])
			}
		}
		name := "select " + strings.Join(tables, "+")
		n := 0
		for _, w := range f {
			if w == "select" {
				n++
			}
		}
		if n > 1 {
			name += " (subqueries)"
		}
		return name
	}
	return f[0]
}

// tracedStore opens a second pool on dbURL, as serving opens its own
// (role, settings), whose statements tr times.
func tracedStore(ctx context.Context, dbURL string, tr *stmtTracer) (*store.DB, error) {
	return store.OpenTraced(ctx, dbURL, tr)
}
