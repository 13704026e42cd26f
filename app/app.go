// Package app wires Perpetuity together and holds its command line. Run is
// the whole program, testable without a process: main only calls it.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
)

// UsageError marks a command-line mistake (exit status 2).
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

// ExitCode maps an error from Run to a process exit status.
func ExitCode(err error) int {
	var ue UsageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// env is how commands read the environment, so tests can pass their own.
type env struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

type command struct {
	summary string
	run     func(ctx context.Context, e env, args []string) error
}

func commands() map[string]command {
	return map[string]command{
		"serve":     {"run the proxy and console (applies migrations first)", runServe},
		"dev":       {"find or start PostgreSQL, create a demo tenant once, and serve (make run)", runDev},
		"migrate":   {"apply (up) or revert (down [N]) schema migrations", runMigrate},
		"tenant":    {"manage tenants: tenant create [--scope user|tenant] [--dict V] NAME | tenant limits ID [--rpm N] [--tpm N] [--tpd N] [--reset]", runTenant},
		"admin":     {"console accounts: admin create EMAIL (a platform admin, password on standard input) | admin reset-link EMAIL | admin unlock EMAIL", runAdmin},
		"devdb":     {"print a DATABASE_URL, starting PostgreSQL if needed (make test uses it)", runDevDB},
		"import":    {"import conversation history: import --tenant ID [--user NAME] [--format jsonl|chatgpt] FILE", runImport},
		"export":    {"write a memory user's memory as JSONL: export --tenant ID --user NAME [--out FILE]", runExport},
		"dict":      {"dictionary rollouts: dict upload FILE | status | derive V | flip V | retire V", runDict},
		"integrity": {"recompute the memory invariants, keep a report: integrity [--tenant ID]", runIntegrity},
		"purge":     {"remove a memory user's whole memory: purge --tenant ID --user NAME [--yes]", runPurge},
		"redact":    {"remove one stored item for good (a pasted secret): redact --tenant ID [--yes] ITEM_ID", runRedact},
	}
}

// Run executes the perpetuity command line.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return run(ctx, env{getenv: os.Getenv, stdin: os.Stdin, stdout: stdout, stderr: stderr}, args)
}

func run(ctx context.Context, e env, args []string) error {
	cmds := commands()
	if len(args) == 2 && args[0] == "help" {
		args = []string{args[1], "--help"} // perpetuity help CMD
	}
	if len(args) == 0 {
		usage(e.stderr, cmds)
		return UsageError{"no command given"}
	}
	if isHelp(args[0]) || args[0] == "help" {
		usage(e.stdout, cmds)
		return nil
	}
	c, ok := cmds[args[0]]
	if !ok {
		if to, moved := movedCommands()[args[0]]; moved {
			return UsageError{fmt.Sprintf("perpetuity %s moved to a command of its own, so the server links no benchmark, eval corpus or fake provider\nusage: go run %s %s   (-h lists the flags)", args[0], benchCommand, to)}
		}
		usage(e.stderr, cmds)
		return UsageError{fmt.Sprintf("unknown command %q", args[0])}
	}
	err := c.run(ctx, e, args[1:])
	if errors.As(err, new(HelpShown)) {
		return nil
	}
	// Commands that read a subcommand before any flag (dict, tenant, admin)
	// take a leading --help for a wrong subcommand, before doing anything:
	// their help is the summary.
	if len(args) > 1 && isHelp(args[1]) && errors.As(err, new(UsageError)) {
		fmt.Fprintf(e.stdout, "Usage: perpetuity %s\n\n%s\n\nRun 'perpetuity %s SUBCOMMAND -h' for a subcommand's flags.\n", args[0], c.summary, args[0])
		return nil
	}
	return err
}

// HelpShown is returned by parseFlags once a command's help is printed: the
// command stops, and the program exits 0.
type HelpShown struct{}

func (HelpShown) Error() string { return "help shown" }

// benchCommand is where the benchmarks and the LoCoMo eval live: a binary
// of their own, since they link a fake provider and an eval corpus reader.
const benchCommand = "./cmd/perpetuity-bench"

// movedCommands are the commands that left this binary, each with how it
// is run now (its flags are benchCommand's to list).
func movedCommands() map[string]string {
	return map[string]string{
		"eval":  "eval locomo [flags] FILE",
		"bench": "bench [all|proxy|pipeline|capture|scan|coldstart|throughput|recall] [flags]",
	}
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
	fmt.Fprintln(w, "Usage: perpetuity COMMAND [flags]\n\nCommands:")
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nConfiguration comes from environment variables:")
	for _, v := range envVars {
		fmt.Fprintf(w, "  %-32s %s (default %q)\n", v.name, v.doc, v.def)
	}
	fmt.Fprintln(w, "\nRun 'perpetuity COMMAND -h' for a command's flags.")
	fmt.Fprintf(w, "The benchmarks and the LoCoMo eval are a command of their own: go run %s bench | eval\n", benchCommand)
}

// newFlags makes a flag set whose errors come back as UsageError. Mistakes
// and their usage go to stderr; asked-for help goes to stdout.
func newFlags(e env, name, synopsis string) *flag.FlagSet {
	return NewFlags("perpetuity", name, synopsis, e.stdout, e.stderr)
}

// NewFlags is newFlags for a program named prog in its usage line, for
// the commands that live outside this binary (cmd/perpetuity-bench) yet
// parse as these do.
func NewFlags(prog, name, synopsis string, stdout, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(flagOutput{stderr: stderr, stdout: stdout})
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s %s\n", prog, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// flagOutput writes to stderr and carries stdout for parseFlags to switch
// to when help was asked for.
type flagOutput struct{ stderr, stdout io.Writer }

func (o flagOutput) Write(p []byte) (int, error) { return o.stderr.Write(p) }

// parseFlags parses args into fs, flags wherever they stand among the
// positional arguments ("eval locomo FILE --json" as well as "eval locomo
// --json FILE"; the flag package alone stops at the first positional), and
// leaves the positional arguments in fs.Args(). Everything after the first
// "--" is positional. A help flag anywhere before "--" prints the usage to
// stdout and returns HelpShown, so the command does nothing else.
func parseFlags(fs *flag.FlagSet, args []string) error {
	head, tail := args, []string(nil)
	if i := slices.Index(args, "--"); i >= 0 {
		head, tail = args[:i], args[i+1:]
	}
	for _, a := range head {
		if isHelp(a) {
			if o, ok := fs.Output().(flagOutput); ok {
				fs.SetOutput(o.stdout)
				defer fs.SetOutput(o)
			}
			fs.Usage()
			return HelpShown{}
		}
	}
	var pos []string
	for {
		if err := fs.Parse(head); err != nil {
			return UsageError{err.Error()}
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		head = fs.Args()[1:]
	}
	// A final parse of "--" and the positionals sets no flag and leaves
	// them where fs.Args() finds them.
	return fs.Parse(append(append([]string{"--"}, pos...), tail...))
}

// ParseFlags is parseFlags for the commands outside this binary.
func ParseFlags(fs *flag.FlagSet, args []string) error { return parseFlags(fs, args) }

func databaseURL(ctx context.Context, e env) (string, error) {
	if u := e.getenv("DATABASE_URL"); u != "" {
		return u, nil
	}
	return devDatabase(ctx, e.getenv, dataDir(e), e.stderr)
}

func runDevDB(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "devdb", "devdb   (prints a DATABASE_URL; starts a private PostgreSQL under PERPETUITY_DATA_DIR if none answers)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return UsageError{"usage: perpetuity devdb (no arguments)"}
	}
	u, err := devDatabase(ctx, e.getenv, dataDir(e), e.stderr)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, strings.TrimSpace(u))
	return nil
}

// dataDir is where development commands keep local state.
func dataDir(e env) string {
	if d := e.getenv("PERPETUITY_DATA_DIR"); d != "" {
		return d
	}
	return ".data"
}
