// Package bench is the performance suite behind `make bench` and
// `perpetuity bench`: a Go load harness with percentiles, the baselines each
// figure is compared against (measured in the same run, interleaved with
// the subject where both are requests), a bulk loader that fills a tenant
// with a synthetic corpus through COPY, and the writer of BENCHMARKS.md.
//
// Every figure is a median over repeated rounds of a per-round percentile,
// with the baseline of the same rounds beside it: the machine is shared and
// noisy, so a single pass would measure the neighbours as much as the code.
//
// The package does not start Perpetuity itself (that would import the app
// that imports it): the caller hands it a Start function that runs the real
// server in-process, and optionally a Recall function that runs the LoCoMo
// eval.
package bench
