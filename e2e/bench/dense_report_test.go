package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func rounds(p50 time.Duration) Rounds {
	return Rounds{Dist: Dist{N: 10, P50: p50, P99: 2 * p50}, Rounds: 1}
}

// TestDenseTargets: issue 16's targets appear with their verdicts and
// same-run baselines, and the sections show v3 rows beside v1's.
func TestDenseTargets(t *testing.T) {
	t.Parallel()
	const msec = time.Millisecond
	mem := func(items, dict int, total time.Duration) MemPathResult {
		return MemPathResult{Items: items, Dict: dict, Users: 10, Capture: rounds(msec), Frame: rounds(total - msec), Total: rounds(total)}
	}
	scan := func(items int, v1, v3 time.Duration, b3 float64) ScanResult {
		return ScanResult{Items: items, K: ScanK, Queries: 10, Workers: 2, Scan: rounds(v1), Floor: msec, BytesPerItem: 158,
			V3: &ScanSide{Scan: rounds(v3), Floor: msec, BytesPerItem: b3}}
	}
	cases := []struct {
		name string
		rep  Report
		want map[string]bool // target ID -> met
		rows []string        // markdown that must appear
	}{
		{
			name: "all met",
			rep: Report{
				MemPath:   []MemPathResult{mem(250_000, 1, 10*msec)},
				MemPathV3: []MemPathResult{mem(250_000, 3, 11*msec)},
				Scan:      []ScanResult{scan(250_000, msec, 1900*time.Microsecond, 300), scan(1_000_000, 2*msec, 7*msec, 290)},
				Pooled:    &PooledResult{Users: 500, Items: 250_000, Visible: 500, V1: mem(250_000, 1, 9*msec), V3: mem(250_000, 3, 10*msec)},
			},
			want: map[string]bool{"mem-v3": true, "scan-v3": true, "arena-v3": true},
			rows: []string{"| 250k items, v3 |", "+1.00 ms (1.10x)", "| 1M | v3 |", "**3.50x**", "250k items, 500 users, v3"},
		},
		{
			name: "all missed",
			rep: Report{
				MemPath:   []MemPathResult{mem(250_000, 1, 10*msec)},
				MemPathV3: []MemPathResult{mem(250_000, 3, 12*msec)},
				Scan:      []ScanResult{scan(250_000, msec, 3*msec, 500)},
			},
			want: map[string]bool{"mem-v3": false, "scan-v3": false, "arena-v3": false},
			rows: []string{"missed by 0.500 ms", "missed by 50 B/item", "| 250k | v1 |"},
		},
		{
			name: "no v3 figures, no v3 targets",
			rep:  Report{MemPath: []MemPathResult{mem(250_000, 1, 10*msec)}},
			want: map[string]bool{},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := map[string]bool{}
			for _, tg := range c.rep.Targets() {
				if strings.HasSuffix(tg.ID, "-v3") {
					if met, seen := got[tg.ID]; seen && met != tg.Met {
						t.Errorf("%s: rows disagree", tg.ID)
					}
					got[tg.ID] = tg.Met
					if tg.Baseline == "" || (!tg.Met && tg.Miss == "") {
						t.Errorf("%s: baseline %q, miss %q", tg.ID, tg.Baseline, tg.Miss)
					}
				}
			}
			if len(got) != len(c.want) {
				t.Errorf("v3 targets %v, want %v", got, c.want)
			}
			for k, met := range c.want {
				if g, ok := got[k]; !ok || g != met {
					t.Errorf("target %s: met %v (present %v), want met %v", k, g, ok, met)
				}
			}
			var buf bytes.Buffer
			if err := c.rep.WriteMarkdown(&buf); err != nil {
				t.Fatal(err)
			}
			for _, r := range c.rows {
				if !strings.Contains(buf.String(), r) {
					t.Errorf("markdown lacks %q:\n%s", r, buf.String())
				}
			}
		})
	}
}

// TestPipelineTargetOnDefault: the full pipeline's target is judged on the
// default dictionary's row when the run measured one (issue 20 §6), on the
// bench tenant's otherwise, and section 2 shows both.
func TestPipelineTargetOnDefault(t *testing.T) {
	t.Parallel()
	const msec = time.Millisecond
	pipe := func(added time.Duration) PipelineResult {
		return PipelineResult{Items: 250_000, Paired: Paired{Base: Dist{N: 10, P50: msec / 10}, Subj: Dist{N: 10, P50: added},
			Added50: added, Added99: 2 * added, PerSide: 10}}
	}
	cases := []struct {
		name     string
		rep      Report
		met      bool
		what     string
		rows     []string
		measured string
	}{
		{"v3 measured", Report{Pipeline: []PipelineResult{pipe(7 * msec)}, PipelineV3: []PipelineResult{pipe(5 * msec)}},
			true, "full pipeline at 250k items, v3 (the default): added p50 <= 6 ms", []string{"| 250k items |", "| 250k items, v3 |", "the target is judged on v3"}, "5.00 ms"},
		{"v1 only", Report{Pipeline: []PipelineResult{pipe(7 * msec)}},
			false, "full pipeline at 250k items: added p50 <= 6 ms", []string{"| 250k items |"}, "7.00 ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var found bool
			for _, tg := range c.rep.Targets() {
				if tg.ID != "pipe" {
					continue
				}
				found = true
				if tg.Met != c.met || tg.What != c.what || tg.Measured != c.measured {
					t.Errorf("target %+v, want met %v, what %q, measured %q", tg, c.met, c.what, c.measured)
				}
			}
			if !found {
				t.Fatal("no full pipeline target")
			}
			var buf bytes.Buffer
			if err := c.rep.WriteMarkdown(&buf); err != nil {
				t.Fatal(err)
			}
			for _, r := range c.rows {
				if !strings.Contains(buf.String(), r) {
					t.Errorf("markdown lacks %q", r)
				}
			}
			if len(c.rep.PipelineV3) == 0 && strings.Contains(buf.String(), "items, v3 |") {
				t.Error("a v3 row without v3 figures")
			}
		})
	}
}

// TestScanAlone: the memory path's scan is set against §4's of the same
// size and dictionary, and against nothing when §4 has none.
func TestScanAlone(t *testing.T) {
	t.Parallel()
	const msec = time.Millisecond
	rep := Report{Scan: []ScanResult{
		{Items: 10_000, Scan: rounds(msec / 10)},
		{Items: 250_000, Scan: rounds(1100 * time.Microsecond), V3: &ScanSide{Scan: rounds(1300 * time.Microsecond)}},
	}}
	for _, tc := range []struct {
		name string
		mp   MemPathResult
		want string // in the clause; "" for none
	}{
		{"v1", MemPathResult{Items: 250_000, Dict: 1}, "alone, with nothing beside it: 1.10 ms"},
		{"v3", MemPathResult{Items: 250_000, Dict: 3}, "alone, with nothing beside it: 1.30 ms"},
		{"v3 without a v3 scan", MemPathResult{Items: 10_000, Dict: 3}, ""},
		{"no scan at the size", MemPathResult{Items: 1_000_000, Dict: 1}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := rep.scanAlone(&tc.mp)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("scanAlone = %q, want %q", got, tc.want)
			}
		})
	}
}
