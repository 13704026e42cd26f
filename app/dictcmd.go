package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/ops"
	"github.com/perpetuity/perpetuity/memory/store"
)

const dictUsage = `dict upload FILE | dict upload --builtin VERSION
       perpetuity dict status [--tenant ID] [--json]
       perpetuity dict derive VERSION [--tenant ID] [--batch N]
       perpetuity dict flip VERSION [--tenant ID]
       perpetuity dict retire VERSION [--tenant ID]`

// cliActor is who the audit log names for command-line operations.
func cliActor() store.Actor { return store.Actor{Email: "cli"} }

// runDict is `perpetuity dict`: dictionary rollouts (DESIGN §8). Upload
// is dark; derive re-derives every row of a tenant (every tenant without
// --tenant) from the stored tokens, resumable; flip switches serving in
// one transaction (every tenant at once without --tenant); retire drops a
// version kept for a flip back.
func runDict(ctx context.Context, e env, args []string) error {
	if len(args) == 0 {
		return UsageError{"usage: perpetuity " + dictUsage}
	}
	sub, args := args[0], args[1:]
	fs := newFlags(e, "dict "+sub, dictUsage)
	tenant := fs.Int64("tenant", 0, "only this tenant (default: every tenant)")
	var builtin *int
	var batch *int
	var asJSON *bool
	var lease *time.Duration
	switch sub {
	case "upload":
		builtin = fs.Int("builtin", 0, "upload the dictionary version shipped in this binary instead of FILE")
	case "derive":
		batch = fs.Int("batch", 500, "items derived per transaction")
		lease = fs.Duration("lease", 15*time.Second, "how long a silent worker keeps the derivation before another may resume it")
	case "status":
		asJSON = fs.Bool("json", false, "print the status as one JSON object")
	case "flip", "retire":
	default:
		return UsageError{fmt.Sprintf("dict: unknown subcommand %q\nusage: perpetuity %s", sub, dictUsage)}
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	pos := fs.Args()
	if *tenant < 0 || (batch != nil && *batch < 1) {
		return UsageError{"usage: perpetuity " + dictUsage}
	}
	var version int
	switch sub {
	case "upload":
		if (len(pos) == 1) == (*builtin > 0) {
			return UsageError{"usage: perpetuity dict upload FILE | dict upload --builtin VERSION"}
		}
	case "status":
		if len(pos) != 0 {
			return UsageError{"usage: perpetuity dict status [--tenant ID] [--json]"}
		}
	default:
		if len(pos) != 1 {
			return UsageError{fmt.Sprintf("usage: perpetuity dict %s VERSION [--tenant ID]", sub)}
		}
		v, err := strconv.Atoi(pos[0])
		if err != nil || v < 1 {
			return UsageError{fmt.Sprintf("usage: perpetuity dict %s VERSION [--tenant ID]", sub)}
		}
		version = v
	}

	_, db, err := openStore(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	switch sub {
	case "upload":
		return dictUpload(ctx, e, db, first(pos), *builtin)
	case "status":
		if *asJSON {
			return dictStatusJSON(ctx, e, db, *tenant)
		}
		return dictStatus(ctx, e, db, *tenant)
	case "derive":
		return dictDerive(ctx, e, db, version, *tenant, *batch, *lease)
	case "flip":
		return dictFlip(ctx, e, db, version, *tenant)
	default:
		return dictRetire(ctx, e, db, version, *tenant)
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func dictUpload(ctx context.Context, e env, db *store.DB, name string, builtin int) error {
	var r io.Reader
	switch {
	case builtin > 0:
		d, err := dict.Builtin(builtin)
		if err != nil {
			return err
		}
		loaded, err := db.UploadDictionary(ctx, d, cliActor())
		if err != nil {
			return err
		}
		return printUploaded(e, ops.Uploaded{Version: d.Version, Name: d.Name, Entries: d.Len(), Loaded: loaded})
	case name == "-":
		r = e.stdin
	default:
		b, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	up, err := ops.Upload(ctx, db, r, cliActor())
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return printUploaded(e, up)
}

func printUploaded(e env, up ops.Uploaded) error {
	if !up.Loaded {
		fmt.Fprintf(e.stdout, "dictionary v%d (%s) is already loaded with these %d entries; nothing changed\n", up.Version, up.Name, up.Entries)
		return nil
	}
	fmt.Fprintf(e.stdout, "loaded dictionary v%d (%s, %d entries) dark: no tenant serves it until `dict derive %d` and `dict flip %d`\n",
		up.Version, up.Name, up.Entries, up.Version, up.Version)
	return nil
}

// tenantsFor is one tenant, or every tenant when id is 0.
func tenantsFor(ctx context.Context, db *store.DB, id int64) ([]store.TenantRef, error) {
	all, err := db.Tenants(ctx)
	if err != nil {
		return nil, err
	}
	if id == 0 {
		return all, nil
	}
	for _, t := range all {
		if t.ID == id {
			return []store.TenantRef{t}, nil
		}
	}
	return nil, fmt.Errorf("tenant %d: %w", id, store.ErrNotFound)
}

func dictStatus(ctx context.Context, e env, db *store.DB, tenant int64) error {
	ds, err := db.Dictionaries(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "dictionaries loaded:")
	for _, d := range ds {
		fmt.Fprintf(e.stdout, "  v%-3d %-28s %7d entries  loaded %s\n", d.Version, d.Name, d.Entries, d.LoadedAt.UTC().Format(time.RFC3339))
	}
	ts, err := tenantsFor(ctx, db, tenant)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "tenants:")
	for _, t := range ts {
		st, err := db.DictStatus(ctx, t.ID)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "  %d %q: serving v%d", t.ID, t.Name, st.Active)
		for _, r := range st.Rollouts {
			fmt.Fprintf(e.stdout, "; %s", describeRollout(r))
		}
		fmt.Fprintln(e.stdout)
	}
	return nil
}

// dictStatusJSON is `dict status --json`.
func dictStatusJSON(ctx context.Context, e env, db *store.DB, tenant int64) error {
	type dictionary struct {
		Version  int       `json:"version"`
		Name     string    `json:"name"`
		Entries  int       `json:"entries"`
		LoadedAt time.Time `json:"loaded_at"`
	}
	type rollout struct {
		Version    int        `json:"version"`
		State      string     `json:"state"` // deriving or ready
		Fraction   float64    `json:"fraction"`
		Derived    int64      `json:"derived"`
		Total      int64      `json:"total"` // items when the derivation started
		LeaseOwner string     `json:"lease_owner,omitempty"`
		LeaseUntil *time.Time `json:"lease_until,omitempty"`
	}
	type tenantStatus struct {
		TenantID int64     `json:"tenant_id"`
		Name     string    `json:"name"`
		Serving  int       `json:"serving"`
		Rollouts []rollout `json:"rollouts"`
	}
	var out struct {
		Dictionaries []dictionary   `json:"dictionaries"`
		Tenants      []tenantStatus `json:"tenants"`
	}
	ds, err := db.Dictionaries(ctx)
	if err != nil {
		return err
	}
	out.Dictionaries = []dictionary{}
	for _, d := range ds {
		out.Dictionaries = append(out.Dictionaries, dictionary{d.Version, d.Name, d.Entries, d.LoadedAt.UTC()})
	}
	ts, err := tenantsFor(ctx, db, tenant)
	if err != nil {
		return err
	}
	out.Tenants = []tenantStatus{}
	for _, t := range ts {
		st, err := db.DictStatus(ctx, t.ID)
		if err != nil {
			return err
		}
		row := tenantStatus{TenantID: t.ID, Name: t.Name, Serving: st.Active, Rollouts: []rollout{}}
		for _, r := range st.Rollouts {
			row.Rollouts = append(row.Rollouts, rollout{r.Version, r.State, r.Fraction(), r.Derived, r.Total, r.LeaseOwner, r.LeaseUntil})
		}
		out.Tenants = append(out.Tenants, row)
	}
	return json.NewEncoder(e.stdout).Encode(out)
}

func describeRollout(r store.Rollout) string {
	if r.State == store.RolloutReady {
		return fmt.Sprintf("v%d ready (flip to it or back to it)", r.Version)
	}
	s := fmt.Sprintf("v%d deriving %.0f%% (%d rows)", r.Version, 100*r.Fraction(), r.Derived)
	if r.LeaseUntil != nil && r.LeaseUntil.After(time.Now()) {
		return s + " by " + r.LeaseOwner
	}
	return s + ", stopped: dict derive resumes it"
}

func dictDerive(ctx context.Context, e env, db *store.DB, version int, tenant int64, batch int, lease time.Duration) error {
	ts, err := tenantsFor(ctx, db, tenant)
	if err != nil {
		return err
	}
	for _, t := range ts {
		bar := newBar(e.stderr, fmt.Sprintf("derive v%d tenant %d", version, t.ID))
		d := &ops.Deriver{St: db, Batch: batch, Lease: lease, Progress: bar.rollout}
		r, err := d.Derive(ctx, t.ID, version, cliActor())
		bar.done()
		if errors.Is(err, store.ErrActiveVersion) {
			fmt.Fprintf(e.stdout, "tenant %d serves v%d already: nothing to derive\n", t.ID, version)
			continue
		}
		if err != nil {
			return fmt.Errorf("tenant %d: %w (committed batches stay; run the command again to resume)", t.ID, err)
		}
		fmt.Fprintf(e.stdout, "tenant %d: v%d ready (%d rows derived, %d items when it started)\n", t.ID, version, r.Derived, r.Total)
	}
	return nil
}

func dictFlip(ctx context.Context, e env, db *store.DB, version int, tenant int64) error {
	var reps []store.FlipReport
	if tenant == 0 {
		var err error
		if reps, err = db.FlipAll(ctx, version, cliActor()); err != nil {
			return fmt.Errorf("%w (no tenant was flipped)", err)
		}
	} else {
		rep, err := db.Flip(ctx, tenant, version, cliActor())
		if err != nil {
			return err
		}
		reps = append(reps, rep)
	}
	for _, r := range reps {
		if r.Seq == 0 {
			fmt.Fprintf(e.stdout, "tenant %d serves v%d already\n", r.TenantID, r.To)
			continue
		}
		fmt.Fprintf(e.stdout, "tenant %d: v%d -> v%d (log position %d); v%d is kept for a flip back\n", r.TenantID, r.From, r.To, r.Seq, r.From)
	}
	return nil
}

func dictRetire(ctx context.Context, e env, db *store.DB, version int, tenant int64) error {
	ts, err := tenantsFor(ctx, db, tenant)
	if err != nil {
		return err
	}
	for _, t := range ts {
		rep, err := db.Retire(ctx, t.ID, version, cliActor())
		if errors.Is(err, store.ErrActiveVersion) {
			if tenant != 0 {
				return err
			}
			fmt.Fprintf(e.stdout, "tenant %d serves v%d: kept\n", t.ID, version)
			continue
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "tenant %d: v%d retired, %d rows removed\n", t.ID, version, rep.Rows)
	}
	return nil
}

// bar is a one-line progress bar on stderr.
type bar struct {
	w     io.Writer
	label string
	mu    sync.Mutex
	last  time.Time
	wrote bool
}

func newBar(w io.Writer, label string) *bar { return &bar{w: progressOut(w), label: label} }

const barWidth = 30

func (b *bar) rollout(r store.Rollout) {
	b.set(r.Fraction(), fmt.Sprintf("%d rows", r.Derived), r.State == store.RolloutReady)
}

func (b *bar) set(frac float64, detail string, final bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !final && time.Since(b.last) < 100*time.Millisecond {
		return
	}
	b.last = time.Now()
	n := int(frac*barWidth + 0.5)
	fmt.Fprintf(b.w, "\r%s [%s%s] %3.0f%% %s", b.label, strings.Repeat("#", n), strings.Repeat("-", barWidth-n), 100*frac, detail)
	b.wrote = true
}

func (b *bar) done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.wrote {
		fmt.Fprintln(b.w)
	}
}
