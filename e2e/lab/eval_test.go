package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/app"
	"github.com/perpetuity/perpetuity/memory/importer/locomo"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// locomoFixture is a two-sample file with the defects of the real data
// (odd evidence ids, questions without evidence, a date without a session,
// a session without a date, an image turn, an empty turn).
const locomoFixture = "../../memory/importer/locomo/testdata/defects.json"

func testEnv(vars map[string]string, stdout, stderr *bytes.Buffer) env {
	return env{getenv: func(k string) string { return vars[k] }, stdout: stdout, stderr: stderr}
}

// TestEvalLocomoEndToEnd runs the whole eval against a real database: the
// real server, the fake provider, import over HTTP, probes through the proxy.
func TestEvalLocomoEndToEnd(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dbURL := dbtest.New(t)
	var stdout, stderr bytes.Buffer
	err := runEval(ctx, testEnv(map[string]string{"DATABASE_URL": dbURL}, &stdout, &stderr), []string{"locomo", "--json", locomoFixture})
	if err != nil {
		t.Fatalf("eval: %v\nstderr:\n%s", err, stderr.String())
	}
	var got locomo.Summary
	dec := json.NewDecoder(&stdout)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("output is not the summary JSON: %v\n%s", err, stdout.String())
	}
	// Categories 1-4 with evidence: six of s-1 (three have none, one is
	// category 5) and two of s-2.
	if got.Questions != 8 {
		t.Errorf("questions = %d, want 8", got.Questions)
	}
	for _, c := range []string{"1", "2", "3", "4", "5"} {
		if _, ok := got.ByCategory[c]; !ok {
			t.Errorf("by_category lacks %s", c)
		}
	}
	for _, b := range []string{"500", "1000", "2000", "4000", "8000"} {
		m, ok := got.Ceilings[b]
		if !ok {
			t.Errorf("ceilings lacks %s", b)
			continue
		}
		if m.TokensMean <= 0 || float64(m.TokensP95) < m.TokensMean*0.5 {
			t.Errorf("ceiling %s tokens: %+v", b, m)
		}
	}
	// The whole file is a few hundred tokens: with 8000 to spend, every
	// evidence turn (the image turn with its caption, the quoted and
	// multi-line turns) must be found in what the provider received.
	if m := got.Ceilings["8000"]; m.Recall != 1 || m.AllEvidence != 1 {
		t.Errorf("at 8000 tokens recall %.3f all-evidence %.3f, want 1 and 1\nstderr:\n%s", m.Recall, m.AllEvidence, stderr.String())
	}
	if !strings.Contains(stderr.String(), "3 questions without usable evidence skipped; 2 evidence ids name no turn") {
		t.Errorf("stderr does not report the skipped questions:\n%s", stderr.String())
	}

	// The scratch tenant is gone, and with it everything imported.
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{`SELECT count(*) FROM tenants`, `SELECT count(*) FROM messages`, `SELECT count(*) FROM items`} {
		var n int
		if err := conn.QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%s = %d after the eval, want 0", q, n)
		}
	}
}

// TestEvalProbesFile: --probes writes every scored probe, one JSON object
// a line, naming its sample and question, and the lines reproduce the
// summary's figures.
func TestEvalProbesFile(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dbURL := dbtest.New(t)
	path := filepath.Join(t.TempDir(), "probes.jsonl")
	var stdout, stderr bytes.Buffer
	err := runEval(ctx, testEnv(map[string]string{"DATABASE_URL": dbURL}, &stdout, &stderr), []string{"locomo", "--json", "--probes", path, locomoFixture})
	if err != nil {
		t.Fatalf("eval: %v\nstderr:\n%s", err, stderr.String())
	}
	var sum locomo.Summary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var all []locomo.Scored
	samples := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var s locomo.Scored
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if s.Sample == "" || s.Question == "" || s.Evidence == 0 || s.Found > s.Evidence {
			t.Errorf("probe %+v", s)
		}
		samples[s.Sample] = true
		all = append(all, s)
	}
	// Every question with evidence (eight of categories 1-4, one of 5),
	// once with the server's frame and once per ceiling.
	if want := 9 * (1 + len(evalCeilings)); len(all) != want {
		t.Errorf("%d probes, want %d", len(all), want)
	}
	if len(samples) != 2 {
		t.Errorf("samples %v, want both of the fixture's", samples)
	}
	got := locomo.Summarize(all, evalCeilings).Overall
	got.Questions = 0 // not in the JSON
	if got != sum.Overall {
		t.Errorf("the lines summarize to %+v, the eval printed %+v", got, sum.Overall)
	}
}

// TestEvalLocomoTools: with --tools each memory tool is probed through the
// real tool loop; at a budget too small for the whole fixture the frame
// misses evidence, and memory_reopen brings a trimmed evidence turn back.
func TestEvalLocomoTools(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dbURL := dbtest.New(t)
	cases := []struct {
		name string
		args []string
		want []string // in stdout
	}{
		{"json", []string{"locomo", "--tools", "--budget", "40", "--json", locomoFixture}, nil},
		{"table", []string{"locomo", "--tools", "--budget", "40", locomoFixture},
			[]string{"memory tools at @40", "tool             missed  reached   share", "memory_reopen", "memory_search", "memory_chain"}},
	}
	for _, tc := range cases {
		var stdout, stderr bytes.Buffer
		if err := runEval(ctx, testEnv(map[string]string{"DATABASE_URL": dbURL}, &stdout, &stderr), tc.args); err != nil {
			t.Fatalf("%s: eval: %v\nstderr:\n%s", tc.name, err, stderr.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout.String(), w) {
				t.Errorf("%s: output lacks %q:\n%s", tc.name, w, stdout.String())
			}
		}
		if tc.want != nil {
			continue
		}
		var got locomo.Summary
		dec := json.NewDecoder(&stdout)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("output is not the summary JSON: %v\n%s", err, stdout.String())
		}
		if got.Questions != 8 || len(got.Ceilings) != 5 {
			t.Errorf("the frame figures changed with --tools: %d questions, %d ceilings", got.Questions, len(got.Ceilings))
		}
		if len(got.Tools) != 3 {
			t.Fatalf("tools = %+v, want memory_reopen, memory_search, memory_chain", got.Tools)
		}
		for name, r := range got.Tools {
			if r.Missed == 0 || r.Reached > r.Missed || r.Share != math.Round(float64(r.Reached)/float64(r.Missed)*1e4)/1e4 {
				t.Errorf("%s: %+v", name, r)
			}
		}
		// Every tool probe sees the same frame, so each counts the same misses.
		if a, b, c := got.Tools["memory_reopen"].Missed, got.Tools["memory_search"].Missed, got.Tools["memory_chain"].Missed; a != b || a != c {
			t.Errorf("missed differs between tools: reopen %d search %d chain %d", a, b, c)
		}
		if r := got.Tools["memory_reopen"]; r.Reached == 0 {
			t.Errorf("memory_reopen reached none of the %d evidence turns the @40 frame trimmed", r.Missed)
		}
	}
}

// TestEvalJSONWithoutTools: without --tools the JSON has no "tools" key.
func TestEvalJSONWithoutTools(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(locomo.Summarize([]locomo.Scored{{Category: 1, Evidence: 1, Found: 1, Tokens: 10}}, evalCeilings))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"tools"`) {
		t.Errorf("summary without tool probes has a tools key: %s", b)
	}
}

func TestEvalUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notJSON := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(notJSON, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, []byte("[]"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args  []string
		usage bool
		want  string
	}{
		{[]string{}, true, "usage: perpetuity-bench eval locomo"},
		{[]string{"mteb", "x"}, true, "usage: perpetuity-bench eval locomo"},
		{[]string{"locomo"}, true, "usage"},
		{[]string{"locomo", "--concurrency", "0", locomoFixture}, true, "usage"},
		{[]string{"locomo", "--tools", "--budget", "0", locomoFixture}, true, "usage"},
		{[]string{"locomo", "--pool", "-1", locomoFixture}, true, "usage"},
		{[]string{"locomo", locomoFixture, "--pool", "1"}, true, "--pool 1 is fewer memory users than the 2 samples asked"},
		{[]string{"locomo", filepath.Join(dir, "missing.json")}, false, "no such file"},
		{[]string{"locomo", notJSON}, false, "want a JSON list of LoCoMo samples"},
		{[]string{"locomo", empty}, false, "no LoCoMo samples"},
	}
	for _, tc := range cases {
		var out, errb bytes.Buffer
		err := runEval(context.Background(), testEnv(nil, &out, &errb), tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
			continue
		}
		if got := app.ExitCode(err) == 2; got != tc.usage {
			t.Errorf("%v: usage error %v, want %v", tc.args, got, tc.usage)
		}
	}
}
