package app

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/perpetuity/perpetuity/memory/ops"
	"github.com/perpetuity/perpetuity/memory/store"
)

const purgeUsage = "purge --tenant ID --user NAME [--yes] [--json]"

// runPurge is `perpetuity purge`: a memory user's whole memory removed in
// one transaction (items, rows, activation, conversations; counts
// decremented), reaching every serving process before its next scan, with
// an audit entry. Unless --yes, the user's name must be typed again.
func runPurge(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "purge", purgeUsage)
	tenant := fs.Int64("tenant", 0, "tenant id (required)")
	user := fs.String("user", "", "memory user whose memory is removed (required)")
	yes := fs.Bool("yes", false, "do not ask for the typed confirmation")
	asJSON := fs.Bool("json", false, "print what was removed as one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 || *tenant <= 0 || *user == "" {
		return UsageError{"usage: perpetuity " + purgeUsage}
	}
	if !*yes {
		fmt.Fprintf(e.stderr, "This removes every item, conversation and heat of memory user %q in tenant %d, for good.\nType the user's name to confirm: ", *user, *tenant)
		line, err := bufio.NewReader(e.stdin).ReadString('\n')
		if strings.TrimRight(line, "\r\n") != *user {
			return errors.Join(errors.New("purge: confirmation does not match the user's name; nothing was purged"), err)
		}
	}
	_, db, err := openStore(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	id, rep, err := ops.PurgeByName(ctx, db, *tenant, *user, cliActor())
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(e.stdout).Encode(struct {
			TenantID int64  `json:"tenant_id"`
			User     string `json:"user"`
			UserID   int64  `json:"user_id"`
			store.PurgeReport
		}{*tenant, *user, id, rep})
	}
	fmt.Fprintf(e.stdout, "purged memory user %q (id %d) of tenant %d: %d items, %d messages, %d conversations (log position %d; every serving process drops them before its next scan)\n",
		*user, id, *tenant, rep.Items, rep.Messages, rep.Conversations, rep.Seq)
	return nil
}
