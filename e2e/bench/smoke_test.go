package bench_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/e2e/lab"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// TestSmokeRun runs `perpetuity-bench bench all --mode smoke` end to end: the
// real server in-process, every section at tiny sizes. It checks the
// report's structure, never its figures (this machine is shared).
func TestSmokeRun(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.New(t)
	out := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return dbURL
		}
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a bound, not a timing: the smoke run loads v1 and v3 and four tenants
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := lab.RunBench(ctx, []string{"all", "--mode", "smoke", "--out", out}, getenv, &stdout, &stderr); err != nil {
		t.Fatalf("bench: %v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, want := range []string{
		"# Perpetuity benchmarks",
		"## Machine", "| PostgreSQL | ", ", autovacuum=", "| Go | go",
		"## Targets",
		"## 1. Pass-through overhead", "| non-streaming, concurrency 1 |", "| streaming: time to first event |",
		"| *plain Go proxy*, streaming: gap between events |", "; through the plain Go proxy ",
		"ms; plain Go proxy adds ", "µs; plain Go proxy adds ",
		"| conversation upsert |", "slowest proxied first events (each round's p99 and beyond)", "slowest gaps through Perpetuity (each round's p99 and beyond)", "through the plain Go proxy p50 ", "By the proxy's Server-Timing: its handling until it began to forward the request",
		"### Beside the Portkey gateway", "not measured in smoke mode", "| Bifrost | 0.44-0.62 |",
		"## 2. Full pipeline overhead", "| 300 items |", "| 300 items, v3 |", "| 300 items, v3, provider answers in 20.0 ms |",
		"## 2b. Cost curve", "](BENCHMARKS-cost.svg)", "| 300 | **", "| 600 | **", "c=64 req/s",
		"## 3. Capture cost", "| capture of one message |", "items/s",
		"## 4. Scan", "| 600 |",
		"## 5. Cold start",
		"## 6. Throughput", "| full pipeline (recall and capture on) |",
		"The chain graph's writer ran beside every capture",
		"## 8. Chain graph writer", "| from scratch (watermark 0) | ", "| restart (at the watermark) | ", "restart / from scratch **",
		"the served chain writer",
		"slowest turns (each round's p99 and beyond) took",
		"## Setup",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// The memory path measured its capture alone too, with a time of its
	// own (the column after the capture's p50 and p99).
	if m := regexp.MustCompile(`(?m)^\| 300 items \| [0-9.]+ \| [0-9.]+ \| ([0-9.]+) \| [0-9.]+ \| [0-9.]+ \| \*\*[0-9.]+\*\* \|`).FindStringSubmatch(doc); m == nil {
		t.Errorf("the memory path's table has no capture alone for 300 items")
	} else if v, err := strconv.ParseFloat(m[1], 64); err != nil || v <= 0 {
		t.Errorf("capture alone at 300 items: %q", m[1])
	}
	// The engine timed the frame's scan and render in the same turns (the
	// two columns after the spread).
	if m := regexp.MustCompile(`(?m)^\| 300 items \|(?: [0-9.]+ \|){5} \*\*[0-9.]+\*\* \| [0-9.]+ \| [^|]+ \| ([0-9.]+) \| ([0-9.]+) \|`).FindStringSubmatch(doc); m == nil {
		t.Errorf("the memory path's table has no frame stages for 300 items")
	} else {
		for i, stage := range []string{"scan", "render"} {
			if v, err := strconv.ParseFloat(m[i+1], 64); err != nil || v <= 0 {
				t.Errorf("the frame's %s at 300 items: %q", stage, m[i+1])
			}
		}
	}
	// The proxied requests' Server-Timing split their added time: memory
	// and the proxy's other handling took some of it in every row (a server
	// that sent none has no table), and the provider got the frame: a
	// request larger than the plain question's (~0.4 kB).
	split := regexp.MustCompile(`(?m)^\| 300 items[^|]* \| [0-9.]+ \| ([0-9.]+) \| ([0-9.]+) \| [0-9.]+ \| [0-9.]+ \| -?[0-9.]+ \| -?[0-9.]+ \| ([0-9.]+) \| -?[0-9.]+ \|$`).FindAllStringSubmatch(doc, -1)
	if len(split) != 3 {
		t.Errorf("want the Server-Timing split of 3 pipeline rows, got %d", len(split))
	}
	for _, m := range split {
		if f, _ := strconv.ParseFloat(m[1], 64); f <= 0 {
			t.Errorf("split row with no memory time: %s", m[0])
		}
		if f, _ := strconv.ParseFloat(m[2], 64); f <= 0 {
			t.Errorf("split row with no handling time: %s", m[0])
		}
		if f, _ := strconv.ParseFloat(m[3], 64); f <= 0.5 {
			t.Errorf("split row whose provider got no frame: %s", m[0])
		}
	}
	// Each growth's checkpoint ran where the role may take one, and the
	// report says why not where it may not.
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var may bool
	if err := conn.QueryRow(ctx, `SELECT rolsuper OR pg_has_role(current_user, 'pg_checkpoint', 'MEMBER')
		FROM pg_roles WHERE rolname = current_user`).Scan(&may); err != nil {
		t.Fatal(err)
	}
	took := regexp.MustCompile(`, checkpoint [0-9.]+[µm]?s[;.]`)
	switch {
	case may && (strings.Contains(doc, "(no checkpoint:") || !took.MatchString(doc)):
		t.Errorf("the role may checkpoint, but the Setup section has no checkpoint after a growth")
	case !may && !strings.Contains(doc, "(no checkpoint: CHECKPOINT (it needs a superuser or pg_checkpoint)"):
		t.Errorf("the role may not checkpoint, and the Setup section does not say so")
	}
	// The chart the markdown embeds is beside it, and is XML.
	svg, err := os.ReadFile(filepath.Join(filepath.Dir(out), "BENCHMARKS-cost.svg"))
	if err != nil {
		t.Errorf("the cost chart is not beside the report: %v", err)
	} else if err := xml.Unmarshal(svg, new(struct{ XMLName xml.Name })); err != nil {
		t.Errorf("the cost chart is not XML: %v", err)
	}
	// Every target row has a verdict.
	rows := regexp.MustCompile(`(?m)^\| [1-7] \| .*\|$`).FindAllString(doc, -1)
	if len(rows) < 5 {
		t.Errorf("want at least 5 target rows, got %d", len(rows))
	}
	for _, r := range rows {
		if !strings.Contains(r, "| met |") && !strings.Contains(r, "missed by") {
			t.Errorf("target row without a verdict: %s", r)
		}
	}
	// Figures are numbers, not blanks or NaN.
	if strings.Contains(doc, "NaN") || strings.Contains(doc, "| |") {
		t.Errorf("report has empty or NaN cells:\n%s", doc)
	}
	if t.Failed() || os.Getenv("BENCH_SHOW") != "" {
		t.Logf("report:\n%s", doc)
	}
}
