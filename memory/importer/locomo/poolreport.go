package locomo

import (
	"fmt"
	"io"
	"strconv"
	"time"
)

// PoolInfo describes the pooled run's tenant once it was filled.
type PoolInfo struct {
	// Users are the memory users holding memory: the real samples and the
	// distractors, counted in the store.
	Users       int   `json:"users"`
	Distractors int   `json:"distractor_users"`
	Items       int64 `json:"items"`
	// FillSeconds is how long importing the distractors took.
	FillSeconds float64 `json:"fill_seconds"`
}

// PoolSummary is the --json output of a pooled eval: the same questions
// asked of the real samples alone and among the distractors.
type PoolSummary struct {
	Pool   PoolInfo `json:"pool"`
	Alone  Summary  `json:"alone"`
	Pooled Summary  `json:"pooled"`
}

// WritePoolTable prints pooled beside alone: per frame and category the
// recall, all-evidence rate and mean frame tokens of both runs, and the
// pooled run's difference.
func WritePoolTable(w io.Writer, info PoolInfo, alone, pooled []Scored, budgets []int, samples int, elapsed time.Duration) {
	sa, sp := Summarize(alone, budgets), Summarize(pooled, budgets)
	fmt.Fprintf(w, "LoCoMo retrieval recall, pooled beside alone: %d samples, %d questions in categories 1-4, %d probes per run, %s\n",
		samples, sa.Questions, len(alone), elapsed.Round(100*time.Millisecond))
	fmt.Fprintf(w, "pool: %d memory users hold memory (%d distractors: renamed, re-dated copies of the file's conversations), %d items, filled in %.1fs\n",
		info.Users, info.Distractors, info.Items, info.FillSeconds)
	fmt.Fprintln(w, "frame: server = the budget the server chose; @N = X-Perpetuity-Frame-Budget: N; d = pooled - alone")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-7s %-16s %9s  %7s %7s %7s  %7s %7s %7s  %8s %8s\n", "", "", "",
		"recall", "", "", "all-ev", "", "", "tokens", "mean")
	fmt.Fprintf(w, "%-7s %-16s %9s  %7s %7s %7s  %7s %7s %7s  %8s %8s\n", "frame", "category", "questions",
		"alone", "pooled", "d", "alone", "pooled", "d", "alone", "pooled")
	cats := categories(alone)
	for _, b := range append([]int{0}, budgets...) {
		label := "server"
		if b > 0 {
			label = "@" + strconv.Itoa(b)
		}
		row := func(name string, keep func(Scored) bool) {
			a, p := Measure(alone, keep), Measure(pooled, keep)
			fmt.Fprintf(w, "%-7s %-16s %9d  %7.3f %7.3f %+7.3f  %7.3f %7.3f %+7.3f  %8.1f %8.1f\n", label, name, a.Questions,
				a.Recall, p.Recall, p.Recall-a.Recall, a.AllEvidence, p.AllEvidence, p.AllEvidence-a.AllEvidence, a.TokensMean, p.TokensMean)
			label = ""
		}
		for _, c := range cats {
			if counted(c) {
				row(categoryLabel(c), func(x Scored) bool { return x.Budget == b && x.Category == c })
			}
		}
		row("overall (1-4)", func(x Scored) bool { return x.Budget == b && counted(x.Category) })
		for _, c := range cats {
			if !counted(c) {
				row(categoryLabel(c), func(x Scored) bool { return x.Budget == b && x.Category == c })
			}
		}
	}
	fmt.Fprintln(w)
	for _, r := range []struct {
		name string
		m    Metrics
	}{{"alone", sa.Overall}, {"pooled", sp.Overall}} {
		fmt.Fprintf(w, "server-chosen frame, categories 1-4, %-6s recall %.3f, all-evidence %.3f, tokens mean %.0f, p95 %d\n",
			r.name+":", r.m.Recall, r.m.AllEvidence, r.m.TokensMean, r.m.TokensP95)
	}
	fmt.Fprintf(w, "pooled - alone, server-chosen frame: recall %+.3f, all-evidence %+.3f\n",
		sp.Overall.Recall-sa.Overall.Recall, sp.Overall.AllEvidence-sa.Overall.AllEvidence)
}
