package lab

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/perpetuity/perpetuity/e2e/bench"
	"github.com/perpetuity/perpetuity/memory/importer/locomo"
)

const benchUsage = "bench [all|proxy|pipeline|cost|capture|scan|coldstart|throughput|recall] [--mode full|quick|smoke] [--out FILE] [--locomo FILE] [--sizes 10k,250k,1M] [--dense-sizes 250k] [--cpuprofile FILE]"

// benchParts maps `perpetuity-bench bench SUB` to the sections it runs.
func benchParts() map[string][]string {
	return map[string][]string{
		"all":        bench.AllSections(),
		"proxy":      {bench.SecProxy},
		"pipeline":   {bench.SecPipeline, bench.SecMemPath},
		"cost":       {bench.SecCost},
		"capture":    {bench.SecCapture},
		"scan":       {bench.SecScan, bench.SecMemPath}, // issue 3: scan at 250k and 1M, memory path at 250k
		"coldstart":  {bench.SecCold},
		"throughput": {bench.SecThroughput},
		"recall":     {bench.SecRecall},
	}
}

// runBench is `perpetuity-bench bench`: the performance suite of e2e/bench
// against the real server started in-process (as the eval does), writing
// markdown (BENCHMARKS.md for `bench all --out BENCHMARKS.md`).
// BENCH_QUICK=1 picks the quick mode.
func runBench(ctx context.Context, e env, args []string) error {
	sub := "all"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	sections, ok := benchParts()[sub]
	if !ok {
		return usageError(fmt.Sprintf("bench: unknown part %q\nusage: %s %s", sub, prog, benchUsage))
	}
	fs := newFlags(e, "bench", benchUsage)
	mode := fs.String("mode", "", "full (minutes), quick (under a minute, 10k items) or smoke (tests); default full, or quick with BENCH_QUICK=1")
	out := fs.String("out", "", "write the markdown to FILE instead of standard output")
	locomoFile := fs.String("locomo", "", "LoCoMo file for the recall section (skipped when empty)")
	sizes := fs.String("sizes", "", "tenant sizes for the pipeline, cold start and throughput, e.g. 10k,250k,1M")
	denseSizes := fs.String("dense-sizes", "", "sizes of --sizes at which a second tenant on dictionary v3 is measured too (memory path, cold start), e.g. 250k")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the run (load tool, server and fake provider share the process)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("usage: " + prog + " " + benchUsage)
	}
	if *mode == "" {
		*mode = "full"
		if q := e.getenv("BENCH_QUICK"); q != "" && q != "0" {
			*mode = "quick"
		}
	}
	cfg, err := bench.ModeConfig(*mode)
	if err != nil {
		return usageError(err.Error())
	}
	if sub != "all" { // "all" takes the mode's sections (quick skips recall)
		cfg.Sections = sections
	}
	cfg.LocomoFile = *locomoFile
	if sub == "scan" && cfg.Mode == "full" {
		cfg.Sizes = []int{250_000}
	}
	if *sizes != "" {
		if cfg.Sizes, err = parseSizes(*sizes); err != nil {
			return usageError("--sizes: " + err.Error())
		}
		if !contains(cfg.Sizes, cfg.ThroughputSize) {
			cfg.ThroughputSize = cfg.Sizes[len(cfg.Sizes)-1]
		}
	}
	if *denseSizes != "" {
		if cfg.DenseSizes, err = parseSizes(*denseSizes); err != nil {
			return usageError("--dense-sizes: " + err.Error())
		}
	}
	u, err := databaseURL(ctx, e)
	if err != nil {
		return err
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	rep, err := bench.Run(ctx, bench.Env{
		DatabaseURL: u,
		Start: func(ctx context.Context, dbURL, openAIBase string) (string, func(), error) {
			return startEvalServer(ctx, withDatabase(e, dbURL), openAIBase)
		},
		Recall: func(ctx context.Context, dbURL, file string) (locomo.Summary, error) {
			return benchRecall(ctx, withDatabase(e, dbURL), file)
		},
		Log: e.stderr,
	}, cfg)
	if rep == nil {
		return err
	}
	// A failed run still writes what it measured, then reports the failure.
	if werr := writeBenchReport(e, rep, *out); werr != nil && err == nil {
		err = werr
	}
	return err
}

// benchRecall is `perpetuity-bench eval locomo --json FILE` as a function.
func benchRecall(ctx context.Context, e env, file string) (locomo.Summary, error) {
	f, err := os.Open(file)
	if err != nil {
		return locomo.Summary{}, err
	}
	samples, err := locomo.Load(f)
	f.Close()
	if err != nil {
		return locomo.Summary{}, fmt.Errorf("%s: %w", file, err)
	}
	scored, err := evalLocomo(ctx, e, samples, evalOptions{concurrency: 4})
	if err != nil {
		return locomo.Summary{}, err
	}
	return locomo.Summarize(scored, evalCeilings), nil
}

func writeBenchReport(e env, rep *bench.Report, out string) error {
	if out == "" {
		return rep.WriteMarkdown(e.stdout)
	}
	written, err := rep.WriteFiles(out)
	for _, f := range written {
		fmt.Fprintf(e.stderr, "bench: wrote %s\n", f)
	}
	return err
}

// parseSizes reads "10k,250k,1M" in increasing order.
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		mult := 1
		switch {
		case strings.HasSuffix(f, "k"), strings.HasSuffix(f, "K"):
			mult, f = 1000, f[:len(f)-1]
		case strings.HasSuffix(f, "M"), strings.HasSuffix(f, "m"):
			mult, f = 1_000_000, f[:len(f)-1]
		}
		v, err := strconv.ParseFloat(f, 64)
		n := int(v * float64(mult))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a size", f)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("sizes must increase (the tenant grows through them)")
		}
		out = append(out, n)
	}
	return out, nil
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
