package bench_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/app"
)

// Temporary driver (deleted before hand-off): BENCH_ARGS="all --mode quick --out /tmp/x.md".
func TestZZRun(t *testing.T) {
	a := os.Getenv("BENCH_ARGS")
	if a == "" {
		t.Skip("BENCH_ARGS unset")
	}
	if err := app.RunBench(context.Background(), strings.Fields(a), os.Getenv, os.Stdout, os.Stderr); err != nil {
		t.Fatal(err)
	}
}
