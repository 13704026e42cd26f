// Command perpetuity-bench runs the benchmark suite and the LoCoMo recall
// eval against the real server in-process. It is a binary of its own so
// that cmd/perpetuity links no benchmark, eval corpus or fake provider.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/perpetuity/perpetuity/app"
	"github.com/perpetuity/perpetuity/e2e/lab"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := lab.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "perpetuity-bench:", err)
		os.Exit(app.ExitCode(err))
	}
}
