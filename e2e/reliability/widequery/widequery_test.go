// Package widequery is issue 15, finding 1: one wide question must not take
// every core. A tenant fills its memory through the import endpoint, then
// asks questions of 20,000 and 100,000 distinct-ish words (probe mode and
// normal mode) while another tenant sends ordinary requests. Each wide
// request must cost the server a bounded amount of CPU whatever the stored
// memory holds, and the other tenant's requests must stay fast meanwhile.
package widequery

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
	"github.com/perpetuity/perpetuity/e2e/reliability/internal/harness"
	"github.com/perpetuity/perpetuity/e2e/rig"
)

const (
	// maxCPUPer20k is what a wide request may cost the server per 20,000
	// words (about 140 KB), capture in normal mode included: the scan is
	// bounded by the term cap and the query analysis reads a bounded slice
	// of the text, so what is left grows with the message's bytes only
	// (parsing, forwarding, storing it), never with the stored memory.
	maxCPUPer20k = 500 * time.Millisecond
	// maxVictimP95 is the other tenant's p95 while the wide questions run,
	// or victimSlowdown times its p95 alone when the machine itself is that
	// slow (a shared machine under load): the attack must not be what makes
	// it slow. p95, not p99: on a shared machine the slowest one in a
	// hundred requests is as slow without any attack (the figure shows p99
	// too).
	maxVictimP95   = 200 * time.Millisecond
	victimSlowdown = 4
	// vocab is the number of words the attacker's memory and questions use:
	// a wide question drawn from it finds most of its words stored, the
	// worst case for a scan that reads every query term.
	vocab = 20_000
	// turnsPerLine and linesPerImport shape the import bodies.
	turnsPerLine   = 50
	linesPerImport = 100
	victimTurns    = 400
	// attackPeriod is how often each of two attackers asks a wide question.
	attackPeriod = time.Second
)

// wide is one kind of wide question.
type wide struct {
	words int
	probe bool
}

func (w wide) String() string {
	mode := "normal"
	if w.probe {
		mode = "probe"
	}
	return fmt.Sprintf("%dk words %s", w.words/1000, mode)
}

func TestWideQuestions(t *testing.T) {
	t.Parallel()
	s := harness.Start(t)
	env := []string{"DATABASE_URL=" + s.DBURL}
	victim := rig.CreateTenant(t, env, "victim")
	stored := figure.N(50_000, 5_000)
	rounds := figure.N(3, 1)
	probes := figure.N(300, 100)

	words := vocabulary(rand.New(rand.NewPCG(15, 1)))
	fillStart := time.Now()
	fill(t, s.URL, s.Key, words, stored, rand.New(rand.NewPCG(15, 2)))
	fill(t, s.URL, victim.Key, words, victimTurns, rand.New(rand.NewPCG(15, 3)))
	fillTook := time.Since(fillStart)
	t.Logf("imported %d + %d turns in %.1f s", stored, victimTurns, fillTook.Seconds())

	ctx := context.Background()
	db, err := pgxpool.New(ctx, s.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	// Warm both arenas: the first request of a tenant loads it.
	for _, key := range []string{s.Key, victim.Key} {
		if _, err := ask(ctx, s.URL, key, "what did we say about the garden", false); err != nil {
			t.Fatal(err)
		}
	}
	// The import's chain links are the server's background work, not a
	// question's: on a loaded machine they once ran on into the first
	// question's CPU window (0.50 s for a question that costs 0.15 s).
	quiet := func() {
		t.Helper()
		waitChain(ctx, t, db)
		settle(s.PID())
	}
	quiet()
	vq := rand.New(rand.NewPCG(15, 4))
	ordinary := func() string { return question(vq, words, 8) }

	// The other tenant alone.
	before := victimRun(ctx, t, s.URL, victim.Key, probes, ordinary, nil)

	// Each kind of wide question alone: its latency and the CPU it costs.
	kinds := []wide{{20_000, true}, {20_000, false}, {100_000, true}, {100_000, false}}
	wq := rand.New(rand.NewPCG(15, 5))
	type solo struct {
		kind wide
		lat  []time.Duration
		cpu  []time.Duration
	}
	solos := make([]solo, len(kinds))
	cpuOK := true
	for i, k := range kinds {
		solos[i].kind = k
		for range rounds {
			q := question(wq, words, k.words)
			quiet()
			c0 := cpuTime(t, s.PID())
			lat, err := ask(ctx, s.URL, s.Key, q, k.probe)
			if err != nil {
				t.Fatalf("%v: %v\n%s", k, err, serverErrors(s))
			}
			// The question's own links (normal mode stores it) are its
			// cost: counted here, and never left to the next question.
			quiet()
			cpu := cpuTime(t, s.PID()) - c0
			solos[i].lat = append(solos[i].lat, lat)
			solos[i].cpu = append(solos[i].cpu, cpu)
			if limit := maxCPUPer20k * time.Duration(k.words/20_000); cpu >= limit {
				cpuOK = false
				t.Errorf("a %v question cost %.2f s of server CPU, want < %v", k, cpu.Seconds(), limit)
			}
		}
	}

	// Two attackers each ask a wide question every attackPeriod (back to
	// back when one takes longer) while the other tenant's requests are
	// timed: the same attack before and after a fix, so the other tenant's
	// latency tells what the attack costs it.
	var stop atomic.Bool
	var wideDone atomic.Int64
	var wideErr atomic.Value
	var wg sync.WaitGroup
	for a := range 2 {
		r := rand.New(rand.NewPCG(15, uint64(10+a)))
		// The attack of the finding: wide questions in probe mode, which
		// cost a new tenant nothing to stage. Normal mode is measured alone
		// only: most of its time is the database storing the message's
		// chunks (200 for 100,000 words), the price of keeping a long
		// message, which no bound on retrieval changes.
		attack := []wide{{20_000, true}, {100_000, true}}
		qs := make([]string, len(attack))
		for i, k := range attack {
			qs[i] = question(r, words, k.words)
		}
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				next := time.Now().Add(attackPeriod)
				j := (i + a) % len(attack)
				if _, err := ask(ctx, s.URL, s.Key, qs[j], attack[j].probe); err != nil {
					wideErr.Store(err)
					return
				}
				wideDone.Add(1)
				for !stop.Load() && time.Now().Before(next) {
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
	time.Sleep(200 * time.Millisecond) // the attack is under way
	during := victimRun(ctx, t, s.URL, victim.Key, probes, ordinary, &stop)
	wg.Wait()
	if err, _ := wideErr.Load().(error); err != nil {
		t.Fatalf("wide question during the attack: %v\n%s", err, serverErrors(s))
	}

	t.Logf("the other tenant's slowest under the attack: %v", slowest(during, 5))
	bp50, bp95, bp99 := harness.Percentile(before, 50), harness.Percentile(before, 95), harness.Percentile(before, 99)
	dp50, dp95, dp99 := harness.Percentile(during, 50), harness.Percentile(during, 95), harness.Percentile(during, 99)
	var soloText []string
	for _, so := range solos {
		var cpu time.Duration
		for _, c := range so.cpu {
			cpu = max(cpu, c)
		}
		soloText = append(soloText, fmt.Sprintf("%v: p50 %s max %s, CPU max %.2f s",
			so.kind, harness.Ms(harness.Percentile(so.lat, 50)), harness.Ms(harness.Percentile(so.lat, 100)), cpu.Seconds()))
	}
	victimLimit := max(maxVictimP95, victimSlowdown*bp95)
	pass := cpuOK && dp95 < victimLimit
	figure.Record(t, figure.Figure{
		Item: 101, Name: "Wide questions",
		Figure: fmt.Sprintf("against %d stored turns: %s; the other tenant p50/p95/p99 %s/%s/%s alone, %s/%s/%s under %d wide questions (%.1fx p95, %.1fx p99)",
			stored, strings.Join(soloText, "; "), harness.Ms(bp50), harness.Ms(bp95), harness.Ms(bp99), harness.Ms(dp50), harness.Ms(dp95), harness.Ms(dp99),
			wideDone.Load(), float64(dp95)/float64(max(bp95, time.Microsecond)), float64(dp99)/float64(max(bp99, time.Microsecond))),
		Target: fmt.Sprintf("each wide request < %v of server CPU per 20,000 words (20k: %v, 100k: %v); the other tenant's p95 "+
			"while they run < %v, or < %dx its p95 alone on a machine slower than that",
			maxCPUPer20k, maxCPUPer20k, 5*maxCPUPer20k, maxVictimP95, victimSlowdown),
		Pass: pass,
		Details: fmt.Sprintf("One tenant imports %d turns (%d-word vocabulary, POST /k/<key>/perpetuity/import, %.1f s) and asks questions of "+
			"20,000 and 100,000 words drawn uniformly from the same vocabulary (about 12,600 and 20,000 distinct stored words), "+
			"%d of each kind alone (X-Perpetuity-Mode: probe, and normal mode, which also stores the question): latency, and the "+
			"server's utime+stime from /proc/<pid>/stat before and after each (after its CPU settles). Then two clients each ask "+
			"one every %v in probe mode (back to back when one takes longer; 20k and 100k words in turn; normal mode, whose "+
			"time is mostly the database storing the message, is measured alone only) while another tenant "+
			"(%d turns) sends %d ordinary 8-word questions in normal mode, one at a time; its latency is compared with %d sent "+
			"before the attack. The scan scores with at most 64 terms (arena.DefaultMaxTerms) and reads at most 16 KiB of a "+
			"question (memory.MaxQueryBytes); the unit tests count them.",
			stored, vocab, fillTook.Seconds(), rounds, attackPeriod, victimTurns, probes, probes),
	})
	if dp95 >= victimLimit {
		t.Errorf("the other tenant's p95 under the attack is %v, want < %v (alone %v)", dp95, victimLimit, bp95)
	}
	if t.Failed() {
		t.Log(serverErrors(s))
	}
}

// slowest are the n largest of ds, largest first.
func slowest(ds []time.Duration, n int) []time.Duration {
	s := slices.Clone(ds)
	slices.SortFunc(s, func(a, b time.Duration) int { return cmp.Compare(b, a) })
	return s[:min(n, len(s))]
}

// serverErrors are the server's error and warning log lines.
func serverErrors(s *harness.Server) string {
	var out []string
	for _, l := range strings.Split(s.Proc.Log.String(), "\n") {
		if strings.Contains(l, `"level":"ERROR"`) || strings.Contains(l, `"level":"WARN"`) {
			out = append(out, fmt.Sprintf("server: %.500s", l))
		}
	}
	return strings.Join(out, "\n")
}

// vocabulary makes vocab distinct pronounceable words the dictionary does
// not know (they become hashed terms, as names do).
func vocabulary(r *rand.Rand) []string {
	cons := []string{"b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z"}
	vows := []string{"a", "e", "i", "o", "u"}
	seen := map[string]bool{}
	out := make([]string, 0, vocab)
	for len(out) < vocab {
		var b strings.Builder
		for range 3 + r.IntN(2) {
			b.WriteString(cons[r.IntN(len(cons))])
			b.WriteString(vows[r.IntN(len(vows))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// question is n words drawn uniformly from words.
func question(r *rand.Rand, words []string, n int) string {
	var b strings.Builder
	b.Grow(n * 10)
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[r.IntN(len(words))])
	}
	return b.String()
}

// fill imports n turns for key's user, Zipf-distributed over words.
func fill(t *testing.T, url, key string, words []string, n int, r *rand.Rand) {
	t.Helper()
	zipf := rand.NewZipf(rand.New(rand.NewPCG(r.Uint64(), 0)), 1.07, 1, uint64(len(words)-1))
	at := time.Date(2024, 1, 1, 9, 0, 0, 0, time.UTC)
	conv := 0
	for done := 0; done < n; {
		var body bytes.Buffer
		for line := 0; line < linesPerImport && done < n; line++ {
			type turn struct {
				Role string `json:"role"`
				Text string `json:"text"`
				At   string `json:"at"`
			}
			var turns []turn
			for i := 0; i < turnsPerLine && done < n; i++ {
				var b strings.Builder
				for j := range 8 + r.IntN(24) {
					if j > 0 {
						b.WriteByte(' ')
					}
					b.WriteString(words[zipf.Uint64()])
				}
				role := "user"
				if i%2 == 1 {
					role = "assistant"
				}
				at = at.Add(time.Minute)
				turns = append(turns, turn{role, b.String(), at.Format(time.RFC3339)})
				done++
			}
			conv++
			l, err := json.Marshal(map[string]any{"conversation": "c" + strconv.Itoa(conv), "turns": turns})
			if err != nil {
				t.Fatal(err)
			}
			body.Write(l)
			body.WriteByte('\n')
		}
		resp, err := http.Post(url+"/k/"+key+"/perpetuity/import", "application/x-ndjson", &body)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("import: %d %s", resp.StatusCode, b)
		}
	}
}

// ask sends one OpenAI chat request and returns its latency; any status
// but 200 is an error.
func ask(ctx context.Context, url, key, q string, probe bool) (time.Duration, error) {
	body, err := json.Marshal(map[string]any{"model": "gpt-4o-mini",
		"messages": []map[string]string{{"role": "user", "content": q}}})
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/k/"+key+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-proj-widequery")
	if probe {
		req.Header.Set("X-Perpetuity-Mode", "probe")
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	lat := time.Since(start)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return lat, fmt.Errorf("status %d: %.300s", resp.StatusCode, b)
	}
	return lat, nil
}

// victimRun sends n ordinary questions one at a time and returns their
// latencies; stop, when given, is set at the end.
func victimRun(ctx context.Context, t *testing.T, url, key string, n int, q func() string, stop *atomic.Bool) []time.Duration {
	t.Helper()
	if stop != nil {
		defer stop.Store(true)
	}
	lat := make([]time.Duration, 0, n)
	for range n {
		d, err := ask(ctx, url, key, q(), false)
		if err != nil {
			t.Errorf("ordinary request: %v", err)
			return lat
		}
		lat = append(lat, d)
		time.Sleep(10 * time.Millisecond)
	}
	return lat
}

// settle waits until the server has used no CPU for 100 ms with none of
// its threads runnable (the reply's capture runs after the response), at
// most 10 s. On a loaded machine a server waiting for a core uses no CPU
// either: without the runnable check its pending work could fall into the
// next measurement.
func settle(pid int) {
	deadline := time.Now().Add(10 * time.Second)
	prev := cpuTicks(pid)
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		now := cpuTicks(pid)
		if now == prev && !runnable(pid) {
			return
		}
		prev = now
	}
}

// runnable reports whether any thread of pid is running or waiting for a
// core (state R in /proc/<pid>/task/<tid>/stat).
func runnable(pid int) bool {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if st := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:]); len(st) > 0 && string(st[0]) == "R" {
			return true
		}
	}
	return false
}

// waitChain returns once the chain writer has linked every stored item of
// every tenant (its watermark at the tenant's head), at most 60 s.
func waitChain(ctx context.Context, t *testing.T, db *pgxpool.Pool) {
	t.Helper()
	const behindSQL = `SELECT count(*), count(*) FILTER (WHERE COALESCE(c.seq, 0) < h.seq)
		FROM tenant_heads h LEFT JOIN chain_heads c ON c.tenant_id = h.tenant_id`
	deadline := time.Now().Add(60 * time.Second)
	for {
		var tenants, behind int
		if err := db.QueryRow(ctx, behindSQL).Scan(&tenants, &behind); err != nil {
			t.Fatalf("chain watermark: %v", err)
		}
		if tenants < 2 {
			t.Fatalf("the chain watermark query sees %d tenants, want both", tenants)
		}
		if behind == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the chain writer did not catch up in 60 s (%d tenants behind)", behind)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	n := cpuTicks(pid)
	if n < 0 {
		t.Fatalf("no /proc/%d/stat", pid)
	}
	return time.Duration(n) * 10 * time.Millisecond
}

// cpuTicks is utime+stime of pid in clock ticks (100 Hz), -1 if unreadable.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// Fields after the command (which may hold spaces), from its ")":
	// utime is field 14 and stime 15.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return ut + st
}
