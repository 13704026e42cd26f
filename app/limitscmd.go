package app

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"

	"github.com/perpetuity/perpetuity/memory/store"
)

const limitsSynopsis = "tenant limits TENANT_ID [--rpm N] [--tpm N] [--tpd N] [--reset] [--json]"

// runTenantLimits shows or changes a tenant's per-key limits (proxy/limits).
// Flags not given keep their value; a tenant's first change
// starts from the service defaults (PERPETUITY_KEY_RPM, PERPETUITY_KEY_TPM),
// so limiting one thing does not lift another. --reset drops the tenant's
// own limits and the defaults apply again.
func runTenantLimits(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "tenant limits", limitsSynopsis)
	rpm := fs.Int64("rpm", 0, "requests per minute per key (0: unlimited)")
	tpm := fs.Int64("tpm", 0, "provider tokens (input + output) per minute per key (0: unlimited)")
	tpd := fs.Int64("tpd", 0, "provider tokens per UTC day per key (0: unlimited)")
	reset := fs.Bool("reset", false, "drop the tenant's own limits: the service defaults apply")
	asJSON := fs.Bool("json", false, "print the limits as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	pos := fs.Args()
	if len(pos) != 1 {
		return UsageError{"usage: perpetuity " + limitsSynopsis}
	}
	tenantID, err := strconv.ParseInt(pos[0], 10, 64)
	if err != nil || tenantID < 1 {
		return UsageError{fmt.Sprintf("tenant limits: %q is not a tenant id", pos[0])}
	}
	var u store.LimitsUpdate
	changes := 0
	var bad error
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "rpm", "tpm":
			v := *rpm
			if f.Name == "tpm" {
				v = *tpm
			}
			if v < 0 || v > math.MaxInt32 {
				bad = UsageError{fmt.Sprintf("tenant limits: --%s wants a whole number from 0 (unlimited) to %d", f.Name, math.MaxInt32)}
				return
			}
			n := int(v)
			if f.Name == "rpm" {
				u.RequestsPerMinute = &n
			} else {
				u.TokensPerMinute = &n
			}
			changes++
		case "tpd":
			if *tpd < 0 {
				bad = UsageError{"tenant limits: --tpd wants a whole number >= 0 (0 is unlimited)"}
				return
			}
			u.TokensPerDay = tpd
			changes++
		}
	})
	if bad != nil {
		return bad
	}
	if *reset && changes > 0 {
		return UsageError{"tenant limits: --reset takes no other limit"}
	}
	cfg, db, err := openStore(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	defaults := store.Limits{RequestsPerMinute: cfg.KeyRPM, TokensPerMinute: cfg.KeyTPM}
	noTenant := fmt.Errorf("tenant limits: no tenant %d", tenantID)
	var l store.Limits
	own := true
	switch {
	case changes > 0:
		l, err = db.SetTenantLimits(ctx, tenantID, u, defaults)
		if errors.Is(err, store.ErrNotFound) {
			return noTenant
		}
	default:
		if ok, err := tenantExists(ctx, db, tenantID); err != nil || !ok {
			if err == nil {
				err = noTenant
			}
			return err
		}
		if *reset {
			if _, err = db.ResetTenantLimits(ctx, tenantID); err != nil {
				return err
			}
		}
		l, err = db.TenantLimits(ctx, tenantID)
		if errors.Is(err, store.ErrNotFound) {
			l, own, err = defaults, false, nil
		}
	}
	if err != nil {
		return err
	}
	printLimits(e, tenantID, l, own, *asJSON)
	return nil
}

func tenantExists(ctx context.Context, db *store.DB, tenantID int64) (bool, error) {
	ts, err := db.Tenants(ctx)
	if err != nil {
		return false, err
	}
	for _, t := range ts {
		if t.ID == tenantID {
			return true, nil
		}
	}
	return false, nil
}

func printLimits(e env, tenantID int64, l store.Limits, own, asJSON bool) {
	source := "tenant"
	if !own {
		source = "defaults"
	}
	if asJSON {
		_ = json.NewEncoder(e.stdout).Encode(map[string]any{
			"tenant_id": tenantID, "requests_per_minute": l.RequestsPerMinute,
			"tokens_per_minute": l.TokensPerMinute, "tokens_per_day": l.TokensPerDay, "source": source,
		})
		return
	}
	if own {
		fmt.Fprintf(e.stdout, "tenant %d, limits per key (its own):\n", tenantID)
	} else {
		fmt.Fprintf(e.stdout, "tenant %d, limits per key (service defaults PERPETUITY_KEY_RPM, PERPETUITY_KEY_TPM):\n", tenantID)
	}
	show := func(n int64) string {
		if n == 0 {
			return "unlimited"
		}
		return strconv.FormatInt(n, 10)
	}
	fmt.Fprintf(e.stdout, "  requests per minute  %s\n", show(int64(l.RequestsPerMinute)))
	fmt.Fprintf(e.stdout, "  tokens per minute    %s\n", show(int64(l.TokensPerMinute)))
	fmt.Fprintf(e.stdout, "  tokens per day       %s\n", show(l.TokensPerDay))
	fmt.Fprintln(e.stdout, "Counted in each serving process: with N replicas a key may get N times these.")
}
