// Package lab is the command line of cmd/perpetuity-bench: the benchmark
// suite (e2e/bench) and the LoCoMo recall eval, each against the real
// server started in-process with a fake provider upstream. It lives apart
// from package app so that the server binary links neither the fake
// provider nor the eval corpus; it borrows app's serving seams and flag
// handling, so its commands parse and fail as the server's do.
package lab

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/perpetuity/perpetuity/app"
)

// prog is the name usage lines give the command.
const prog = "perpetuity-bench"

// env is how commands read the environment, so tests can pass their own.
type env struct {
	getenv func(string) string
	stdout io.Writer
	stderr io.Writer
}

type command struct {
	summary string
	run     func(ctx context.Context, e env, args []string) error
}

func commands() map[string]command {
	return map[string]command{
		"bench": {"performance suite: bench [all|proxy|pipeline|cost|capture|scan|coldstart|throughput|recall] [--out FILE]; BENCH_QUICK=1 for a quick run", runBench},
		"eval":  {"recall benchmark: eval locomo [--json] [--dict V] [--pool N] [--samples N] [--questions N] FILE", runEval},
	}
}

// Run executes the perpetuity-bench command line.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return run(ctx, env{getenv: os.Getenv, stdout: stdout, stderr: stderr}, args)
}

// RunBench is `perpetuity-bench bench ARGS` with its environment passed in,
// for tests (e2e/bench runs the smoke mode through it).
func RunBench(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return run(ctx, env{getenv: getenv, stdout: stdout, stderr: stderr}, append([]string{"bench"}, args...))
}

// run dispatches as the server's command line does: help on stdout and
// exit 0, a mistake a UsageError (exit 2, app.ExitCode).
func run(ctx context.Context, e env, args []string) error {
	cmds := commands()
	if len(args) == 2 && args[0] == "help" {
		args = []string{args[1], "--help"}
	}
	if len(args) == 0 {
		usage(e.stderr, cmds)
		return usageError("no command given")
	}
	if isHelp(args[0]) || args[0] == "help" {
		usage(e.stdout, cmds)
		return nil
	}
	c, ok := cmds[args[0]]
	if !ok {
		usage(e.stderr, cmds)
		return usageError(fmt.Sprintf("unknown command %q", args[0]))
	}
	err := c.run(ctx, e, args[1:])
	if errors.As(err, new(app.HelpShown)) {
		return nil
	}
	// eval reads its subcommand before any flag, so a leading --help gets
	// the summary.
	if len(args) > 1 && isHelp(args[1]) && errors.As(err, new(app.UsageError)) {
		fmt.Fprintf(e.stdout, "Usage: %s %s\n\n%s\n\nRun '%s %s SUBCOMMAND -h' for a subcommand's flags.\n", prog, args[0], c.summary, prog, args[0])
		return nil
	}
	return err
}

func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "--h"
}

func usage(w io.Writer, cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(w, "Usage: %s COMMAND [flags]   (go run ./cmd/%s from the repository)\n\nCommands:\n", prog, prog)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nThe database is DATABASE_URL, or a development PostgreSQL as `perpetuity devdb` finds or")
	fmt.Fprintln(w, "starts; the server started in-process reads the variables of `perpetuity --help`.")
	fmt.Fprintf(w, "\nRun '%s COMMAND -h' for a command's flags.\n", prog)
}

func usageError(msg string) error { return app.UsageError{Msg: msg} }

func newFlags(e env, name, synopsis string) *flag.FlagSet {
	return app.NewFlags(prog, name, synopsis, e.stdout, e.stderr)
}

func parseFlags(fs *flag.FlagSet, args []string) error { return app.ParseFlags(fs, args) }

func databaseURL(ctx context.Context, e env) (string, error) {
	return app.DatabaseURL(ctx, e.getenv, e.stderr)
}

// withDatabase is e with DATABASE_URL pointing at dbURL.
func withDatabase(e env, dbURL string) env {
	get := e.getenv
	e.getenv = func(k string) string {
		if k == "DATABASE_URL" {
			return dbURL
		}
		return get(k)
	}
	return e
}
