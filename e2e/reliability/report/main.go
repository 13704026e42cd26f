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

// items are the twelve lines, in its order.
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
	fmt.Fprintf(w, "# RELIABILITY\n\nWritten by `make reliability` on %s. Every line of issue 9 has its figures below; a line with no figure says so.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"))
	if testExit != 0 {
		fmt.Fprintf(w, "**The test run exited with status %d**: a test failed or could not record its figure; see the run's output.\n\n", testExit)
	}
	fmt.Fprintln(w, "| # | check | figure | target | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	byItem := map[int][]figure.Figure{}
	for _, f := range figs {
		byItem[f.Item] = append(byItem[f.Item], f)
	}
	for i := 1; i < len(items); i++ {
		if len(byItem[i]) == 0 {
			fmt.Fprintf(w, "| %d | %s | **no figure recorded** | — | missing |\n", i, items[i])
			continue
		}
		for _, f := range byItem[i] {
			verdict := "pass"
			if !f.Pass {
				verdict = "**FAIL**"
			}
			if f.Short {
				verdict += " (short form)"
			}
			fmt.Fprintf(w, "| %d | %s | %s | %s | %s |\n", i, cell(f.Name), cell(f.Figure), cell(f.Target), verdict)
		}
	}
	fmt.Fprintln(w, "\n## How each figure was measured")
	for i := 1; i < len(items); i++ {
		for _, f := range byItem[i] {
			if f.Details == "" {
				continue
			}
			fmt.Fprintf(w, "\n### %d. %s\n\n%s\n", i, f.Name, strings.TrimSpace(f.Details))
		}
	}
}

func cell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }
