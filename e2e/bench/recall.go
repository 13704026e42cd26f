package bench

import (
	"context"
	"time"

	"github.com/perpetuity/perpetuity/memory/importer/locomo"
)

// RecallFunc runs the LoCoMo eval (perpetuity-bench eval locomo --json) on file
// against databaseURL.
type RecallFunc func(ctx context.Context, databaseURL, file string) (locomo.Summary, error)

// RecallResult is section 7.
type RecallResult struct {
	File    string
	Summary locomo.Summary
	Took    time.Duration
}

// Baseline is a row of the bench README's baseline table (LoCoMo dev set,
// categories 1-4, 663 questions): evidence recall at each ceiling and the
// all-evidence rate at 2000 and 4000 tokens.
type Baseline struct {
	Name     string
	Recall   map[int]float64
	AllAt    map[int]float64
	Describe string
}

// Baselines are copied from ../shared/bench/README.md ("Baselines on these
// four conversations"); they were measured once, outside this code.
func Baselines() []Baseline {
	return []Baseline{
		{Name: "BM25 top-k", Describe: "plain BM25 over single turns, frame filled greedily in rank order",
			Recall: map[int]float64{500: 0.553, 1000: 0.627, 2000: 0.683, 4000: 0.735, 8000: 0.798},
			AllAt:  map[int]float64{2000: 0.618, 4000: 0.662}},
		{Name: "recency (last N tokens)", Describe: "the most recent turns that fit",
			Recall: map[int]float64{500: 0.014, 1000: 0.032, 2000: 0.086, 4000: 0.151, 8000: 0.305},
			AllAt:  map[int]float64{2000: 0.075, 4000: 0.130}},
	}
}

// RecallCeilings are the fixed budgets of the table.
func RecallCeilings() []int { return []int{500, 1000, 2000, 4000, 8000} }

func runRecall(ctx context.Context, recall RecallFunc, dbURL, file string, lg *logger) (*RecallResult, error) {
	lg.printf("recall: perpetuity-bench eval locomo %s", file)
	t0 := time.Now()
	s, err := recall(ctx, dbURL, file)
	if err != nil {
		return nil, err
	}
	return &RecallResult{File: file, Summary: s, Took: time.Since(t0)}, nil
}
