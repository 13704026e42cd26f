package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/perpetuity/perpetuity/app"
	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/importer/locomo"
	"github.com/perpetuity/perpetuity/memory/ops"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/memory/text"
)

// evalCeilings are the fixed frame budgets of the bench README's table.
var evalCeilings = []int{500, 1000, 2000, 4000, 8000}

// clientRequestID ties an upstream request to its probe: OpenAI's own
// client request id, one of the few headers the proxy forwards (README,
// "What crosses to and from the provider"), so the fake provider sees it.
const clientRequestID = "X-Client-Request-Id"

// The id's prefixes tell a frame probe from a tool probe.
const (
	probeHeader     = "probe-"
	toolProbeHeader = "tool-"
)

// evalTools are the memory tools whose reach --tools measures, in table
// order. memory_count is left out: it answers with counts and a few
// examples, not with the turns a question needs.
var evalTools = []string{memory.ToolReopen, memory.ToolSearch, memory.ToolChain}

const evalUsage = "eval locomo [--json] [--dict V] [--pool N] [--samples N] [--questions N] [--probes FILE] [--concurrency N] [--tools [--budget N]] FILE"

// runEval is `perpetuity-bench eval locomo FILE`: the recall benchmark of
// the bench README, self-contained. It starts the real server in-process on
// a loopback port with a recording fake provider as upstream, imports every
// sample as one memory user of one scratch tenant through the HTTP import
// endpoint, asks every question with evidence in probe mode through the
// proxy (once with the frame the server chooses, once per fixed budget),
// and scores what the provider received. The scratch tenant is removed
// afterwards.
func runEval(ctx context.Context, e env, args []string) error {
	if len(args) == 0 || args[0] != "locomo" {
		return usageError("usage: " + prog + " " + evalUsage)
	}
	fs := newFlags(e, "eval locomo", evalUsage)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s %s\n", prog, evalUsage)
		fs.PrintDefaults()
		fmt.Fprintf(fs.Output(), "\n%s\n", poolHelp)
	}
	asJSON := fs.Bool("json", false, "print one JSON object instead of the table")
	nSamples := fs.Int("samples", 0, "only the first N samples (0: all)")
	nQuestions := fs.Int("questions", 0, "at most N questions with evidence per sample (0: all)")
	conc := fs.Int("concurrency", 4, "questions asked at once")
	dictV := fs.Int("dict", 0, "start the scratch tenant on v1 and move it to this shipped dictionary version by the dark rollout before asking (0: start on the default new tenants get)")
	tools := fs.Bool("tools", false, "also measure how much evidence the frame missed each memory tool reaches")
	budget := fs.Int("budget", 2000, "frame budget of the --tools probes")
	probesOut := fs.String("probes", "", "also write every scored probe (sample, question, category, budget, evidence, found, tokens) to this file, one JSON object a line, for per-sample and per-question comparisons")
	poolN := fs.Int("pool", 0, "also ask from a tenant where N memory users hold memory (distractors: renamed, re-dated copies of the file's conversations) and report pooled beside alone (0: alone only)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 1 || *nSamples < 0 || *nQuestions < 0 || *conc < 1 || *budget < 1 || *poolN < 0 {
		fs.Usage()
		return usageError("usage: " + prog + " " + evalUsage)
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	samples, err := locomo.Load(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", fs.Arg(0), err)
	}
	file := samples
	if *nSamples > 0 && *nSamples < len(samples) {
		samples = samples[:*nSamples]
	}
	if len(samples) == 0 {
		return fmt.Errorf("%s: no LoCoMo samples", fs.Arg(0))
	}
	if *poolN > 0 && *poolN < len(samples) {
		fs.Usage()
		return usageError(fmt.Sprintf("eval locomo: --pool %d is fewer memory users than the %d samples asked", *poolN, len(samples)))
	}
	start := time.Now()
	opt := evalOptions{questions: *nQuestions, concurrency: *conc, dict: *dictV}
	if *tools {
		opt.toolBudget = *budget
	}
	if *poolN > 0 {
		return evalPooled(ctx, e, samples, opt, &poolFill{users: *poolN, file: file}, *asJSON, start)
	}
	scored, reach, err := evalLocomoTools(ctx, e, samples, opt)
	if err != nil {
		return err
	}
	if *probesOut != "" {
		if err := writeProbes(*probesOut, scored); err != nil {
			return err
		}
	}
	if *asJSON {
		sum := locomo.Summarize(scored, evalCeilings)
		if *tools {
			sum.Tools = locomo.SummarizeTools(reach)
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(sum)
	}
	locomo.WriteTable(e.stdout, scored, evalCeilings, len(samples), time.Since(start))
	if *tools {
		locomo.WriteToolTable(e.stdout, reach, evalTools, *budget)
	}
	return nil
}

type evalOptions struct {
	questions   int // per sample, 0: all
	concurrency int
	dict        int       // dictionary version to serve the questions with, 0: the default
	toolBudget  int       // > 0: also probe each memory tool's reach at this frame budget
	pool        *poolFill // set: fill the tenant with distractor users first (evalpool.go)
	keepTenant  bool      // the scratch tenant's database is dropped whole afterwards
}

// probe is one question asked under one budget (0: the server chooses).
type probe struct {
	sample   string
	question string
	category int
	evidence []string // verbatim texts of the evidence turns, as imported
	budget   int

	// Written by the fake provider's hook.
	seen   bool
	found  int
	tokens int
	err    error
}

// evalLocomo runs the benchmark and returns the scored probes.
func evalLocomo(ctx context.Context, e env, samples []locomo.Sample, opt evalOptions) ([]locomo.Scored, error) {
	scored, _, err := evalLocomoTools(ctx, e, samples, opt)
	return scored, err
}

// evalLocomoTools runs the benchmark and returns the scored probes, and
// with opt.toolBudget the scored tool probes.
func evalLocomoTools(ctx context.Context, e env, samples []locomo.Sample, opt evalOptions) ([]locomo.Scored, []locomo.ToolScored, error) {
	r, err := runLocomo(ctx, e, samples, opt)
	return r.scored, r.reach, err
}

// evalResult is one run of the benchmark on one scratch tenant.
type evalResult struct {
	scored []locomo.Scored
	reach  []locomo.ToolScored
	pool   locomo.PoolInfo // with opt.pool only
}

// runLocomo runs the benchmark on a scratch tenant of its own; with
// opt.pool the tenant is filled with distractor users before the
// dictionary step and the questions.
func runLocomo(ctx context.Context, e env, samples []locomo.Sample, opt evalOptions) (evalResult, error) {
	var res evalResult
	counter, err := text.NewCounter()
	if err != nil {
		return res, err
	}
	probes, skipped, dropped := buildProbes(samples, opt.questions)
	if len(probes) == 0 {
		return res, errors.New("no question has evidence that names an existing turn: nothing to score")
	}
	var tprobes []toolProbe
	if opt.toolBudget > 0 {
		tprobes = buildToolProbes(probes, opt.toolBudget)
	}
	if skipped > 0 || dropped > 0 {
		fmt.Fprintf(e.stderr, "eval: %d questions without usable evidence skipped; %d evidence ids name no turn and were left out\n", skipped, dropped)
	}

	var mu sync.Mutex
	var sinceReset atomic.Int64
	fake := fakeprovider.New()
	fake.SetDefault(func(r fakeprovider.Recorded) fakeprovider.Reply {
		if sinceReset.Add(1)%256 == 0 {
			fake.Reset() // scoring happens here; the fake need not keep every body
		}
		id := r.Header.Get(clientRequestID)
		if h, ok := strings.CutPrefix(id, toolProbeHeader); ok {
			i, err := strconv.Atoi(h)
			if err != nil || i < 0 || i >= len(tprobes) {
				return fakeprovider.Reply{}
			}
			return tprobes[i].answer(&mu, r.Body)
		}
		h, ok := strings.CutPrefix(id, probeHeader)
		i, err := strconv.Atoi(h)
		if !ok || err != nil || i < 0 || i >= len(probes) {
			return fakeprovider.Reply{}
		}
		p := &probes[i]
		found, tokens, serr := locomo.ScoreRequest(r.Body, p.question, p.evidence, counter.Count)
		mu.Lock()
		p.seen, p.found, p.tokens, p.err = true, found, tokens, serr
		mu.Unlock()
		return fakeprovider.Reply{Text: "ok"}
	})
	upstream := httptest.NewServer(fake)
	defer upstream.Close()

	base, stopServer, err := startEvalServer(ctx, e, upstream.URL+"/v1")
	if err != nil {
		return res, err
	}
	stop := sync.OnceFunc(stopServer)
	defer stop()

	u, err := databaseURL(ctx, e)
	if err != nil {
		return res, err
	}
	db, err := store.Open(ctx, u)
	if err != nil {
		return res, err
	}
	defer db.Close()
	// Tenant-wide: the evaluation speaks as each sample's memory user. With
	// --dict the tenant starts on v1 and moves by the dark rollout, as an
	// existing tenant would (a v3 derivation then freezes the tenant's own
	// common direction); without, it starts on the default, as a new one.
	start := 0
	if opt.dict > 0 {
		start = 1
	}
	nt, err := db.CreateTenantWith(ctx, "eval-locomo "+time.Now().UTC().Format(time.RFC3339), "eval", store.TenantOptions{Scope: store.ScopeTenant, Dict: start})
	if err != nil {
		return res, fmt.Errorf("create scratch tenant: %w", err)
	}
	defer func() {
		if opt.keepTenant {
			return
		}
		// The server first: it writes its last request records of the
		// tenant as it stops, which a tenant already gone refused.
		stop()
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := db.DeleteTenant(dctx, nt.TenantID); err != nil {
			fmt.Fprintf(e.stderr, "eval: could not remove scratch tenant %d: %v\n", nt.TenantID, err)
		}
	}()

	client := &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{
		Proxy: nil, MaxIdleConnsPerHost: opt.concurrency + 1,
	}}
	defer client.CloseIdleConnections()
	keyBase := base + "/k/" + nt.Key
	bar := newProgress(e.stderr)
	imported, err := importSamples(ctx, client, keyBase+"/perpetuity/import", samples, bar)
	if err != nil {
		return res, err
	}
	fmt.Fprintf(e.stderr, "eval: imported %d conversations, %d turns\n", imported.Conversations, imported.Turns+imported.Duplicates)
	if opt.pool != nil {
		// Before the dictionary step: a derivation's tenant-wide statistics
		// (the common direction of v3) then include the distractors.
		if res.pool, err = opt.pool.fill(ctx, e, db, nt.TenantID, len(samples), bar); err != nil {
			return res, err
		}
	}

	if opt.dict > 0 {
		d, err := dict.Builtin(opt.dict)
		if err != nil {
			return res, err
		}
		if _, err := db.UploadDictionary(ctx, d, app.CLIActor()); err != nil {
			return res, err
		}
		derive := &ops.Deriver{St: db, Progress: func(r store.Rollout) { bar.update("derive", int(r.Derived), int(r.Total)) }}
		_, err = derive.Derive(ctx, nt.TenantID, opt.dict, app.CLIActor())
		bar.done()
		if err != nil && !errors.Is(err, store.ErrActiveVersion) {
			return res, err
		}
		if errors.Is(err, store.ErrActiveVersion) && opt.pool != nil {
			fmt.Fprintf(e.stderr, "eval: note: the pooled tenant was born on v%d, so no derivation after the fill: its tenant-wide statistics are the ones it was born with\n", opt.dict)
		}
		if _, err := db.Flip(ctx, nt.TenantID, opt.dict, app.CLIActor()); err != nil {
			return res, err
		}
		fmt.Fprintf(e.stderr, "eval: scratch tenant derived and flipped to dictionary v%d\n", opt.dict)
	}
	// The questions see the chain graph of everything imported, as a later
	// conversation would: the server's writer catches up off the import's
	// path, and is waited for here.
	if err := waitChain(ctx, db, nt.TenantID); err != nil {
		return res, err
	}
	chatURL := keyBase + "/v1/chat/completions"
	if err := warmUp(ctx, client, chatURL, samples); err != nil {
		return res, err
	}
	err = askAll(ctx, "probes", len(probes), opt.concurrency, bar, func(ctx context.Context, i int) error {
		return ask(ctx, client, chatURL, &probes[i], probeHeader, i, false)
	})
	if err != nil {
		return res, err
	}
	err = askAll(ctx, "tools", len(tprobes), opt.concurrency, bar, func(ctx context.Context, i int) error {
		return ask(ctx, client, chatURL, &tprobes[i].probe, toolProbeHeader, i, true)
	})
	if err != nil {
		return res, err
	}
	mu.Lock()
	defer mu.Unlock()
	scored := make([]locomo.Scored, len(probes))
	for i := range probes {
		p := &probes[i]
		if !p.seen {
			return res, fmt.Errorf("the provider never received question %q of %s (budget %d)", p.question, p.sample, p.budget)
		}
		if p.err != nil {
			return res, fmt.Errorf("question %q of %s: upstream request: %w", p.question, p.sample, p.err)
		}
		scored[i] = locomo.Scored{Sample: p.sample, Question: p.question, Category: p.category, Budget: p.budget, Evidence: len(p.evidence), Found: p.found, Tokens: p.tokens}
	}
	reach := make([]locomo.ToolScored, len(tprobes))
	for i := range tprobes {
		p := &tprobes[i]
		switch {
		case !p.seen:
			return res, fmt.Errorf("the provider never received question %q of %s (tool %s)", p.question, p.sample, p.tool)
		case p.err != nil:
			return res, fmt.Errorf("question %q of %s (tool %s): upstream request: %w", p.question, p.sample, p.tool, p.err)
		case p.calls > 0 && !p.followed:
			return res, fmt.Errorf("question %q of %s: the results of %d %s calls never reached the provider", p.question, p.sample, p.calls, p.tool)
		}
		reach[i] = locomo.ToolScored{Tool: p.tool, Category: p.category, Missed: len(p.missed), Reached: p.reached}
	}
	return evalResult{scored: scored, reach: reach, pool: res.pool}, nil
}

// buildProbes makes one probe per question with evidence and budget.
func buildProbes(samples []locomo.Sample, perSample int) (probes []probe, skipped, dropped int) {
	for i := range samples {
		s := &samples[i]
		n := 0
		for _, q := range s.Questions {
			dropped += len(q.Dropped)
			if len(q.Evidence) == 0 {
				skipped++
				continue
			}
			if perSample > 0 && n >= perSample {
				continue
			}
			n++
			ev := make([]string, len(q.Evidence))
			for j, id := range q.Evidence {
				t, _ := s.Turn(id)
				ev[j] = t.Text
			}
			for _, b := range append([]int{0}, evalCeilings...) {
				probes = append(probes, probe{sample: s.ID, question: q.Text, category: q.Category, evidence: ev, budget: b})
			}
		}
	}
	return probes, skipped, dropped
}

// writeProbes writes the scored probes one JSON object a line: the summary
// is an average, and whether a change helps each conversation or only one
// is read from these.
func writeProbes(path string, scored []locomo.Scored) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, s := range scored {
		if err := enc.Encode(s); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return f.Close()
}
