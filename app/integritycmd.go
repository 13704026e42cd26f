package app

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/perpetuity/perpetuity/memory/ops"
	"github.com/perpetuity/perpetuity/memory/store"
)

const integrityUsage = "integrity [--tenant ID] [--show N] [--json]"

// runIntegrity is `perpetuity integrity`: it recomputes the invariants of
// every tenant (or one), keeps a report per tenant (listed in the console)
// and prints every violation with the rows involved. Any violation makes
// the exit status non-zero. The arena it compares is one this command
// loads fresh from the store; the console's check compares the serving
// process's own.
func runIntegrity(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "integrity", integrityUsage)
	tenant := fs.Int64("tenant", 0, "only this tenant (default: every tenant)")
	show := fs.Int("show", 100, "violations printed per tenant (all are kept in the report)")
	asJSON := fs.Bool("json", false, "print the reports as one JSON object (the exit status still says whether anything is broken)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 || *tenant < 0 || *show < 0 {
		return UsageError{"usage: perpetuity " + integrityUsage}
	}
	cfg, db, err := openStore(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	eng, err := newEngine(ctx, cfg, db)
	if err != nil {
		return err
	}
	ts, err := tenantsFor(ctx, db, *tenant)
	if err != nil {
		return err
	}
	// The chain graph is rebuilt under the rules serve's writer applies
	// (the shipped lexicon: the checker's default).
	ck := &ops.Checker{St: db, Arenas: eng}
	var bad, total int64
	out := integrityJSON{Tenants: []tenantIntegrity{}}
	for _, t := range ts {
		rep, vs, err := ck.Check(ctx, t.ID, cliActor())
		if err != nil {
			return fmt.Errorf("tenant %d: %w", t.ID, err)
		}
		if *asJSON {
			out.Tenants = append(out.Tenants, newTenantIntegrity(t, rep, vs, *show))
		} else {
			printReport(e, t, rep, vs, *show)
		}
		if rep.Violations > 0 {
			bad++
			total += rep.Violations
		}
	}
	if *asJSON {
		out.Violations = total
		if err := json.NewEncoder(e.stdout).Encode(out); err != nil {
			return err
		}
	}
	if bad > 0 {
		return fmt.Errorf("integrity: %d violations in %d of %d tenants", total, bad, len(ts))
	}
	return nil
}

// integrityJSON is `integrity --json`: one object for every tenant checked.
type integrityJSON struct {
	Violations int64             `json:"violations"` // across every tenant
	Tenants    []tenantIntegrity `json:"tenants"`
}

type tenantIntegrity struct {
	TenantID    int64            `json:"tenant_id"`
	Name        string           `json:"name"`
	ReportID    int64            `json:"report_id"`
	Items       int64            `json:"items"`
	DictVersion *int             `json:"dict_version"`
	HeadSeq     *int64           `json:"head_seq"`
	Violations  int64            `json:"violations"`
	Counts      map[string]int64 `json:"counts"` // violations per invariant
	Notes       []string         `json:"notes"`
	Shown       []violationJSON  `json:"shown"` // the first --show violations; the report keeps all
}

type violationJSON struct {
	Invariant string          `json:"invariant"`
	ItemID    *int64          `json:"item_id"`
	Detail    string          `json:"detail"`
	Rows      json.RawMessage `json:"rows,omitempty"`
}

func newTenantIntegrity(t store.TenantRef, rep store.IntegrityReport, vs []store.Violation, show int) tenantIntegrity {
	ti := tenantIntegrity{TenantID: t.ID, Name: t.Name, ReportID: rep.ID, Items: rep.Items, DictVersion: rep.DictVersion,
		HeadSeq: rep.HeadSeq, Violations: rep.Violations, Counts: rep.Counts, Notes: []string{}, Shown: []violationJSON{}}
	if ti.Counts == nil {
		ti.Counts = map[string]int64{}
	}
	for _, n := range strings.Split(rep.Notes, "; ") {
		if n != "" {
			ti.Notes = append(ti.Notes, n)
		}
	}
	for i, v := range vs {
		if i == show {
			break
		}
		ti.Shown = append(ti.Shown, violationJSON{Invariant: v.Invariant, ItemID: v.ItemID, Detail: v.Detail, Rows: v.Rows})
	}
	return ti
}

func printReport(e env, t store.TenantRef, rep store.IntegrityReport, vs []store.Violation, show int) {
	at := ""
	if rep.DictVersion != nil && rep.HeadSeq != nil {
		at = fmt.Sprintf(", v%d at log position %d", *rep.DictVersion, *rep.HeadSeq)
	}
	verdict := "OK"
	if rep.Violations > 0 {
		var parts []string
		for inv, n := range rep.Counts {
			parts = append(parts, fmt.Sprintf("%s %d", inv, n))
		}
		slices.Sort(parts)
		verdict = fmt.Sprintf("%d violations (%s)", rep.Violations, strings.Join(parts, ", "))
	}
	fmt.Fprintf(e.stdout, "tenant %d %q: %d items%s: %s [report %d]\n", t.ID, t.Name, rep.Items, at, verdict, rep.ID)
	for i, v := range vs {
		if i == show {
			fmt.Fprintf(e.stdout, "  ... %d more in report %d (console: Integrity)\n", len(vs)-show, rep.ID)
			break
		}
		fmt.Fprintf(e.stdout, "  %-20s %s  %s\n", v.Invariant, v.Detail, v.Rows)
	}
	for _, n := range strings.Split(rep.Notes, "; ") {
		if n != "" {
			fmt.Fprintf(e.stdout, "  note: %s\n", n)
		}
	}
}
