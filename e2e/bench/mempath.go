package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/store"
)

// MemPathResult is the whole memory path of one turn without HTTP or an
// upstream (issue 3): capture the live question and, beside it, retrieve
// and render its frame (reheats written), through a memory.Engine of this
// process. Frame is the turn's time past the capture's.
type MemPathResult struct {
	Items   int
	Dict    int // the tenant's dictionary version
	Users   int // memory users holding the items
	Capture Rounds
	Frame   Rounds
	Total   Rounds
	// Alone is the same capture with no frame beside it, in the same
	// rounds: what the capture costs of the database, where Capture adds
	// what the frame's work on the same cores holds it back.
	Alone Rounds
	// Scan and Render are two of the frame's stages in the same turns, as
	// the engine times them (memory.Observer): its scan (both of a v1
	// frame's), and its render (reading the texts the item cache lacks,
	// counting, rendering).
	Scan, Render Rounds
	// Count is counting the model tokens of CountBodies stored bodies with
	// the embedded BPE counter, as a frame does for its candidates.
	Count       Rounds
	CountBodies int
	// Statements is where a turn's database time goes (mean per turn, as
	// the client sees it).
	Statements []Stmt
	// Tail is where the slowest turns' time goes (tail.go).
	Tail Tail
}

// FrameCandidates is how many candidates a frame reads and prices at most
// (memory/frame.go fetchLimit).
const FrameCandidates = 400

// memPath keeps one engine and one conversation per user across sizes, so
// its arena catches up as the tenant grows like a serving process's does.
type memPath struct {
	eng    *memory.Engine
	tr     *stmtTracer
	stages *stageClock
	db     *store.DB
	convs  map[int64]int64 // memory user -> conversation
	pos    map[int64]int
}

func newMemPath(ctx context.Context, k *kit, dbURL string) (*memPath, error) {
	tr := newStmtTracer()
	db, err := tracedStore(ctx, dbURL, tr)
	if err != nil {
		return nil, err
	}
	eng, stages := k.engineOn(db), &stageClock{}
	eng.SetObserver(stages)
	return &memPath{eng: eng, tr: tr, stages: stages, db: db, convs: map[int64]int64{}, pos: map[int64]int{}}, nil
}

// stageClock adds up the frame's stages the engine reports, until taken.
type stageClock struct {
	mu           sync.Mutex
	scan, render time.Duration
}

func (c *stageClock) Duration(stage string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch stage {
	case "scan":
		c.scan += d
	case "render":
		c.render += d
	}
}

func (c *stageClock) FrameTokens(int) {}

// take returns what was reported since the last take.
func (c *stageClock) take() (scan, render time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	scan, render, c.scan, c.render = c.scan, c.render, 0, 0
	return scan, render
}

func (mp *memPath) close() { mp.db.Close() }

// question is text asked by the u-th memory user of t as the next
// question of their one conversation of the memory path (made on their
// first question), committing apart as serving's live question does.
// Once stored, the caller moves the conversation on (asked).
func (mp *memPath) question(ctx context.Context, k *kit, t *Tenant, text string, u int64) (memory.Message, error) {
	user := t.Users[u-1]
	conv, ok := mp.convs[user]
	if !ok {
		var err error
		if conv, err = k.db.EnsureConversation(ctx, t.ID, user, "h:bench-memory-path", "memory path"); err != nil {
			return memory.Message{}, err
		}
		mp.convs[user] = conv
	}
	who := memory.Who{TenantID: t.ID, UserID: user, UserName: fmt.Sprintf("u%d", u), ConversationID: conv}
	return memory.Message{Who: who, Role: "user", Text: text, Position: mp.pos[user], CommitApart: true}, nil
}

// asked leaves room after m for its reply.
func (mp *memPath) asked(m memory.Message) { mp.pos[m.UserID] += 2 }

func (mp *memPath) turn(ctx context.Context, k *kit, t *Tenant, text string, u int64) (turnTrace, error) {
	m, err := mp.question(ctx, k, t, text, u)
	if err != nil {
		return turnTrace{}, err
	}
	// The previous turn's deferred reheat would otherwise compete with
	// this capture, which in serving it does not: the provider's answer
	// comes between two turns of a conversation.
	mp.eng.WaitReheats()
	// As serving does (proxy captureAndFrame): the frame is built beside
	// the capture, and the turn ends when both have.
	t0 := time.Now()
	var capEnd time.Time
	_, _, err = mp.eng.FrameBeside(ctx, memory.FrameQuery{Who: m.Who, Live: text, Now: time.Now()}, func(b memory.Beside) (store.Captured, error) {
		m.Stored, m.Sending = b.Stored, b.Sending
		c, err := mp.eng.Capture(ctx, m)
		capEnd = time.Now()
		return c, err
	})
	end := time.Now()
	scan, render := mp.stages.take() // this frame's, whatever became of it
	if err != nil {
		return turnTrace{}, fmt.Errorf("memory path: %w", err)
	}
	mp.asked(m)
	tt := traceTurn(t0, capEnd, end, mp.tr.take())
	tt.scan, tt.render = scan, render
	return tt, nil
}

// captureAlone stores the live question as turn does, with no frame
// beside it, and returns how long the capture took. Its round trips are
// not counted among the turns' statements. The caller has waited for the
// deferred reheats (runMemPaths' ask).
func (mp *memPath) captureAlone(ctx context.Context, k *kit, t *Tenant, text string, u int64) (time.Duration, error) {
	m, err := mp.question(ctx, k, t, text, u)
	if err != nil {
		return 0, err
	}
	mp.tr.pause(true)
	defer mp.tr.pause(false)
	t0 := time.Now()
	_, err = mp.eng.Capture(ctx, m)
	d := time.Since(t0)
	if err != nil {
		return 0, fmt.Errorf("capture alone: %w", err)
	}
	mp.asked(m)
	return d, nil
}

func runMemPath(ctx context.Context, mp *memPath, k *kit, t *Tenant, lr liveRequests, bodies []string, cfg Config, lg *logger) (*MemPathResult, error) {
	res, err := runMemPaths(ctx, []memSide{{mp, t}}, k, lr, bodies, cfg, lg)
	if err != nil {
		return nil, err
	}
	return &res[0], nil
}

// memSide is one tenant measured by the memory path, with its own engine
// and tracer.
type memSide struct {
	mp *memPath
	t  *Tenant
}

// runMemPaths measures the memory path of several tenants (the same items
// under v1 and v3) with the same questions: each question is asked of
// every tenant back to back, in an order that turns with the question, so
// a busy neighbour slows them alike. Results are in the order of sides.
func runMemPaths(ctx context.Context, sides []memSide, k *kit, lr liveRequests, bodies []string, cfg Config, lg *logger) ([]MemPathResult, error) {
	// The first turn catches each engine's arena up with the growth.
	for _, s := range sides {
		if _, err := s.mp.turn(ctx, k, s.t, lr.text[0], lr.user[0]); err != nil {
			return nil, err
		}
		s.mp.tr.reset()
		s.mp.tr.keepSpans()
	}
	type samples struct {
		alone  [][]time.Duration
		traces [][]turnTrace // each round's turns
	}
	got := make([]samples, len(sides))
	var counts [][]time.Duration
	i := 1
	for round := range cfg.Rounds {
		lg.printf("memory path %s%s: round %d/%d", itemsLabel(sides[0].t.Items), sidesLabel(sides), round+1, cfg.Rounds)
		tr := make([][]turnTrace, len(sides))
		// ask puts n questions to every tenant as above. Another engine's
		// deferred reheat would compete with the turn, which in serving it
		// does not.
		ask := func(n int, fn func(x, q int) error) error {
			for range n {
				q := i % len(lr.text)
				i++
				for j := range sides {
					for _, o := range sides {
						o.mp.eng.WaitReheats()
					}
					if err := fn((j+i)%len(sides), q); err != nil {
						return err
					}
				}
			}
			return nil
		}
		err := ask(cfg.MemPathTurns, func(x, q int) error {
			s := sides[x]
			got, err := s.mp.turn(ctx, k, s.t, lr.text[q], lr.user[q])
			if err != nil {
				return err
			}
			tr[x] = append(tr[x], got)
			return nil
		})
		// The same capture with no frame beside it, on questions of its
		// own (none asked twice).
		a := make([][]time.Duration, len(sides))
		if err == nil {
			err = ask(cfg.aloneTurns(), func(x, q int) error {
				d, err := sides[x].mp.captureAlone(ctx, k, sides[x].t, lr.text[q], lr.user[q])
				a[x] = append(a[x], d)
				return err // a failed capture's d is not read
			})
		}
		if err != nil {
			return nil, err
		}
		for x := range sides {
			got[x].alone = append(got[x].alone, a[x])
			got[x].traces = append(got[x].traces, tr[x])
		}
		var cs []time.Duration
		for range 5 {
			t0 := time.Now()
			for _, b := range bodies {
				k.counter.Count(b)
			}
			cs = append(cs, time.Since(t0))
		}
		counts = append(counts, cs)
	}
	out := make([]MemPathResult, len(sides))
	for x, s := range sides {
		tr := got[x].traces
		out[x] = MemPathResult{Items: s.t.Items, Dict: s.t.Dict, Users: len(s.t.Users),
			Capture: foldTurns(tr, func(t turnTrace) time.Duration { return t.capture }),
			Frame:   foldTurns(tr, func(t turnTrace) time.Duration { return t.total - t.capture }),
			Total:   foldTurns(tr, func(t turnTrace) time.Duration { return t.total }),
			Scan:    foldTurns(tr, func(t turnTrace) time.Duration { return t.scan }),
			Render:  foldTurns(tr, func(t turnTrace) time.Duration { return t.render }),
			Alone:   Fold(got[x].alone), Count: Fold(counts), CountBodies: len(bodies),
			Statements: s.mp.tr.per(cfg.Rounds * cfg.MemPathTurns), Tail: tailOf(tr)}
	}
	return out, nil
}

// foldTurns folds one figure of each round's turns.
func foldTurns(rounds [][]turnTrace, of func(turnTrace) time.Duration) Rounds {
	ds := make([][]time.Duration, len(rounds))
	for i, turns := range rounds {
		for _, t := range turns {
			ds[i] = append(ds[i], of(t))
		}
	}
	return Fold(ds)
}

func sidesLabel(sides []memSide) string {
	if len(sides) < 2 {
		return ""
	}
	out := ""
	for _, s := range sides {
		out += fmt.Sprintf(" v%d", s.t.Dict)
	}
	return "," + out
}
