package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/perpetuity/perpetuity/memory/importer"
	"github.com/perpetuity/perpetuity/memory/store"
)

const exportUsage = "export --tenant ID --user NAME [--out FILE [--json]]   (JSONL, the format import reads; stdout by default)"

// runExport is `perpetuity export`: a memory user's whole memory as JSONL
// that `perpetuity import` reads back. A file is written beside its final
// name and renamed into place only when complete, so a failed export never
// leaves a file that looks whole.
func runExport(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "export", exportUsage)
	tenant := fs.Int64("tenant", 0, "id of the tenant (required)")
	user := fs.String("user", "", "name of the memory user whose memory to export (required)")
	out := fs.String("out", "-", "file to write; - is standard output")
	asJSON := fs.Bool("json", false, "with --out: print what was written as one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 || *tenant <= 0 || *user == "" || *out == "" {
		fs.Usage()
		return UsageError{"usage: perpetuity " + exportUsage}
	}
	if *asJSON && *out == "-" {
		fs.Usage()
		return UsageError{"export: --json describes the file written; give --out FILE (the export itself is JSON Lines on stdout)"}
	}
	_, db, err := openStore(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	uid, err := db.UserByName(ctx, *tenant, *user)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("export: tenant %d has no memory user %q", *tenant, *user)
	}
	if err != nil {
		return err
	}

	if *out == "-" {
		res, err := importer.Export(ctx, db, *tenant, uid, e.stdout)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		fmt.Fprintf(e.stderr, "exported %d conversations, %d turns of memory user %q\n", res.Conversations, res.Turns, *user)
		return nil
	}
	res, err := writeAtomically(*out, func(w io.Writer) (importer.Result, error) {
		return importer.Export(ctx, db, *tenant, uid, w)
	})
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if *asJSON {
		return json.NewEncoder(e.stdout).Encode(map[string]any{
			"tenant_id": *tenant, "user": *user, "file": *out, "conversations": res.Conversations, "turns": res.Turns,
		})
	}
	fmt.Fprintf(e.stdout, "exported %d conversations, %d turns of memory user %q to %s\n", res.Conversations, res.Turns, *user, *out)
	return nil
}

// writeAtomically runs write into a temporary file in path's directory and
// renames it to path once write and the file's sync succeed.
func writeAtomically(path string, write func(io.Writer) (importer.Result, error)) (importer.Result, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.partial")
	if err != nil {
		return importer.Result{}, err
	}
	tmp := f.Name()
	res, err := write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return res, err
	}
	return res, nil
}
