package bench

import (
	"slices"
	"testing"
)

// TestGrowthPlan checks which sizes the bench tenant grows through before
// §8 and which after it: §8 measures the tenant at the largest of
// cfg.Sizes, so the cost curve's larger sizes wait for it.
func TestGrowthPlan(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		sections   []string
		sizes      []int
		cost       []int
		now, later []int
	}{
		{"full", AllSections(), []int{10_000, 250_000, 1_000_000}, []int{10_000, 100_000, 250_000, 1_000_000},
			[]int{10_000, 100_000, 250_000, 1_000_000}, nil},
		{"quick", AllSections(), []int{10_000}, []int{10_000, 50_000}, []int{10_000}, []int{50_000}},
		{"cost alone", []string{SecCost}, []int{10_000}, []int{10_000, 50_000}, []int{10_000, 50_000}, nil},
		{"no chain", []string{SecPipeline, SecCost}, []int{10_000}, []int{10_000, 50_000}, []int{10_000, 50_000}, nil},
		{"no cost", []string{SecPipeline, SecChain}, []int{300}, []int{300, 600}, []int{300}, nil},
		{"neither", []string{SecProxy, SecScan}, []int{300}, []int{300, 600}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{Sections: tc.sections, Sizes: tc.sizes, CostSizes: tc.cost}
			now, later := growthPlan(cfg)
			if !slices.Equal(now, tc.now) || !slices.Equal(later, tc.later) {
				t.Errorf("growthPlan = %v, %v; want %v, %v", now, later, tc.now, tc.later)
			}
		})
	}
}
