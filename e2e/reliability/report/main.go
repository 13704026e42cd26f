// Command report assembles RELIABILITY.md from the figure files the
// reliability tests wrote (see package figure). An issue line without a
// figure is reported as missing, never left out.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
)

// items are issue 9's twelve lines, in its order.
var items = []string{
	1:  "Crash during capture",
	2:  "Database restart",
	3:  "Client disconnects",
	4:  "Upstream faults",
	5:  "Tenant isolation",
	6:  "Secrets",
	7:  "Authorization",
	8:  "Bad input",
	9:  "Slow clients",
	10: "Long streams",
	11: "Stored prompt injection",
	12: "Rate limits and quotas",
}

// hardening are issue 15's findings, recorded as items 100+N (N its number
// in the issue), its key-scope decision as 114 and the body budget as 115.
// They are reported as H1..H15 in a table of their own.
var hardening = []string{
	1:  "Wide questions",
	2:  "Metric and log cardinality",
	3:  "Slow or absent bodies",
	4:  "Upstream redirects and paths",
	5:  "Provider response headers",
	6:  "Outbound header policy",
	7:  "Invite enumeration",
	8:  "Import limits and hang-ups",
	9:  "Unstorable input",
	10: "Sign-in lockout",
	11: "Frame budget ceiling",
	12: "Nothing stored means nothing",
	13: "Public URL scheme",
	14: "Key scope",
	15: "Bodies held at once",
}

// hardeningBase is the item number of hardening finding 0.
const hardeningBase = 100

// section is one table of the report: its title, its lines and how a line
// is numbered.
type section struct {
	title string
	names []string
	base  int
	label func(i int) string
}

var sections = []section{
	{title: "Issue 9: the reliability suite", names: items, base: 0, label: func(i int) string { return fmt.Sprint(i) }},
	{title: "Issue 15: hardening against attacks on the running service", names: hardening, base: hardeningBase,
		label: func(i int) string { return fmt.Sprintf("H%d", i) }},
}

func main() {
	dir := flag.String("dir", "", "folder of figure JSON files")
	out := flag.String("out", "RELIABILITY.md", "file to write")
	testExit := flag.Int("test-exit", 0, "exit status of the test run, reported in the header")
	flag.Parse()
	figs, err := load(*dir)
	if err == nil {
		var f *os.File
		if f, err = os.Create(*out); err == nil {
			write(f, figs, *testExit)
			err = f.Close()
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
	for _, f := range figs {
		if !f.Pass {
			os.Exit(1)
		}
	}
}

func load(dir string) ([]figure.Figure, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var figs []figure.Figure
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var f figure.Figure
		if err := json.Unmarshal(b, &f); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		figs = append(figs, f)
	}
	sort.SliceStable(figs, func(i, j int) bool {
		if figs[i].Item != figs[j].Item {
			return figs[i].Item < figs[j].Item
		}
		return figs[i].Name < figs[j].Name
	})
	return figs, nil
}

func write(w io.Writer, figs []figure.Figure, testExit int) {
	fmt.Fprintf(w, "# RELIABILITY\n\nWritten by `make reliability` on %s. Every line of issue 9 and every finding of issue 15 has its figures below; a line with no figure says so.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"))
	if testExit != 0 {
		fmt.Fprintf(w, "**The test run exited with status %d**: a test failed or could not record its figure; see the run's output.\n\n", testExit)
	}
	byItem := map[int][]figure.Figure{}
	for _, f := range figs {
		byItem[f.Item] = append(byItem[f.Item], f)
	}
	for _, sec := range sections {
		fmt.Fprintf(w, "## %s\n\n", sec.title)
		fmt.Fprintln(w, "| # | check | figure | target | verdict |")
		fmt.Fprintln(w, "|---|---|---|---|---|")
		for i := 1; i < len(sec.names); i++ {
			fs := byItem[sec.base+i]
			if len(fs) == 0 {
				fmt.Fprintf(w, "| %s | %s | **no figure recorded** | — | missing |\n", sec.label(i), sec.names[i])
				continue
			}
			for _, f := range fs {
				verdict := "pass"
				if !f.Pass {
					verdict = "**FAIL**"
				}
				if f.Short {
					verdict += " (short form)"
				}
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", sec.label(i), cell(f.Name), cell(f.Figure), cell(f.Target), verdict)
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "## How each figure was measured")
	for _, sec := range sections {
		for i := 1; i < len(sec.names); i++ {
			for _, f := range byItem[sec.base+i] {
				if f.Details == "" {
					continue
				}
				fmt.Fprintf(w, "\n### %s. %s\n\n%s\n", sec.label(i), f.Name, strings.TrimSpace(f.Details))
			}
		}
	}
}

func cell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }
