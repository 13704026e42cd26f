// Package bench is the performance suite behind `make bench` and
// `perpetuity-bench bench` (cmd/perpetuity-bench): a Go load harness with percentiles, the baselines each
// figure is compared against (measured in the same run, interleaved with
// the subject where both are requests), a bulk loader that fills a tenant
// with a synthetic corpus through COPY, and the writer of BENCHMARKS.md.
//
// Dictionary v3 (word vectors, the hybrid scan) is measured beside v1 in
// the same run: the scan, the memory path and the cold start each run on a
// second arena or tenant holding the same synthetic text under v3, and a
// pooled tenant (hundreds of users in one tenant) is measured on both. Rows,
// vectors and arena items come from the product's own code
// (memory.DeriveRow, memory.ToArenaItem, dict.Space), never a copy.
//
// Section 1 also measures a peer in Perpetuity's place, in the same rounds
// and against the same fake provider: the open-source Portkey gateway,
// installed with npm into the user's cache and run with Node (peer.go,
// peer_run.go); a peer that cannot be installed or started is reported,
// never fatal. Section 2b, the cost curve, measures the memory path, the
// arena and the full pipeline's throughput as the bench tenant grows, and
// writes its chart as an SVG beside the markdown (costcurve.go, svg.go).
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
