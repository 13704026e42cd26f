package app

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/perpetuity/perpetuity/memory/ops"
	"github.com/perpetuity/perpetuity/memory/store"
)

const redactUsage = "redact --tenant ID [--yes] [--json] ITEM_ID"

// runRedact is `perpetuity redact`: one stored item (the turn with a pasted
// secret) removed for good with everything keyed by it, in one transaction
// that every serving process applies before its next scan, with an audit
// entry that names the item and its owner, never its content. Unless
// --yes, the item's id must be typed again.
func runRedact(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "redact", redactUsage)
	tenant := fs.Int64("tenant", 0, "tenant id (required)")
	yes := fs.Bool("yes", false, "do not ask for the typed confirmation")
	asJSON := fs.Bool("json", false, "print what was removed as one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 || *tenant <= 0 {
		return UsageError{"usage: perpetuity " + redactUsage}
	}
	item, err := strconv.ParseInt(strings.TrimPrefix(fs.Arg(0), "#"), 10, 64)
	if err != nil || item <= 0 {
		return UsageError{"usage: perpetuity " + redactUsage + ": ITEM_ID is the number the console shows as #ID"}
	}
	if !*yes {
		fmt.Fprintf(e.stderr, "This removes item #%d of tenant %d for good: its text, retrieval rows, heat and chain links, from every serving process.\nType the item's id to confirm: ", item, *tenant)
		line, err := bufio.NewReader(e.stdin).ReadString('\n')
		if strings.TrimPrefix(strings.TrimSpace(line), "#") != strconv.FormatInt(item, 10) {
			return errors.Join(errors.New("redact: confirmation does not match the item's id; nothing was redacted"), err)
		}
	}
	_, db, err := openStore(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	rep, err := (&ops.Redactor{St: db}).Redact(ctx, *tenant, item, cliActor())
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(e.stdout).Encode(struct {
			TenantID int64 `json:"tenant_id"`
			store.RedactReport
		}{*tenant, rep})
	}
	fmt.Fprintf(e.stdout, "redacted item #%d of memory user %d in tenant %d: %d retrieval rows, %d activations, %d chain edges (log position %d; every serving process drops it before its next scan)\n",
		rep.ItemID, rep.UserID, *tenant, rep.Rows, rep.Activations, rep.Edges, rep.Seq)
	return nil
}
