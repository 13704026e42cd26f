package app

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations"
	"github.com/perpetuity/perpetuity/web"
)

func runMigrate(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "migrate", "migrate up | down [N|all]")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	// The arguments are checked before a database is looked for: a typo
	// must not start a development cluster.
	steps := 1
	switch {
	case fs.Arg(0) == "up" && fs.NArg() == 1:
	case fs.Arg(0) == "down" && fs.NArg() <= 2:
		if s := fs.Arg(1); s == "all" {
			steps = 0
		} else if s != "" {
			var err error
			if steps, err = strconv.Atoi(s); err != nil || steps < 1 {
				return UsageError{"usage: perpetuity migrate down [N|all]: N must be a positive number"}
			}
		}
	default:
		fs.Usage()
		return UsageError{"usage: perpetuity migrate up | down [N|all]"}
	}
	u, err := databaseURL(ctx, e)
	if err != nil {
		return err
	}
	if fs.Arg(0) == "up" {
		err = migrations.Up(u)
	} else {
		err = migrations.Down(u, steps)
	}
	if err != nil {
		return err
	}
	v, dirty, err := migrations.Version(u)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "schema at version %d (dirty=%v)\n", v, dirty)
	return nil
}

func runTenant(ctx context.Context, e env, args []string) error {
	if len(args) > 0 && args[0] == "limits" {
		return runTenantLimits(ctx, e, args[1:])
	}
	if len(args) == 0 || args[0] != "create" {
		return UsageError{"usage: perpetuity " + tenantCreateSynopsis + " | perpetuity " + limitsSynopsis}
	}
	fs := newFlags(e, "tenant create", tenantCreateSynopsis)
	user := fs.String("user", "default", "name of the first memory user")
	scopeFlag := fs.String("scope", "user", "the first key's scope: user (pinned to the first memory user: X-Perpetuity-User may only repeat it) or tenant (may name any memory user)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	dictV := fs.Int("dict", 0, "the dictionary version the tenant starts on (0: the default, v"+strconv.Itoa(dict.Default)+", or the version most tenants serve if newer)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 1 || fs.Arg(0) == "" || *dictV < 0 {
		return UsageError{"usage: perpetuity " + tenantCreateSynopsis}
	}
	scope, err := store.ParseKeyScope(*scopeFlag)
	if err != nil {
		return UsageError{"usage: perpetuity " + tenantCreateSynopsis + ": " + err.Error()}
	}
	cfg, db, err := openStore(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	nt, err := db.CreateTenantWith(ctx, fs.Arg(0), *user, store.TenantOptions{Scope: scope, Dict: *dictV})
	if err != nil {
		return err
	}
	printTenant(e, cfg, nt, *asJSON)
	return nil
}

const tenantCreateSynopsis = "tenant create [--user NAME] [--scope user|tenant] [--dict V] [--json] NAME"

func printTenant(e env, cfg Config, nt store.NewTenant, asJSON bool) {
	openai := cfg.PublicURL + "/k/" + nt.Key + "/v1"
	anthropic := cfg.PublicURL + "/k/" + nt.Key
	if asJSON {
		_ = json.NewEncoder(e.stdout).Encode(map[string]any{
			"tenant_id": nt.TenantID, "user": nt.UserName, "key": nt.Key, "scope": nt.Scope,
			"openai_base_url": openai, "anthropic_base_url": anthropic,
		})
		return
	}
	fmt.Fprintf(e.stdout, "tenant %d created with memory user %q\n", nt.TenantID, nt.UserName)
	fmt.Fprintf(e.stdout, "API key (shown once, store it now): %s\n", nt.Key)
	if nt.Scope == store.ScopeTenant {
		fmt.Fprintf(e.stdout, "Key scope: tenant-wide (X-Perpetuity-User may name any memory user)\n")
	} else {
		fmt.Fprintf(e.stdout, "Key scope: pinned to memory user %q (X-Perpetuity-User may only repeat it)\n", nt.UserName)
	}
	fmt.Fprintf(e.stdout, "OpenAI-style base URL:    %s\n", openai)
	fmt.Fprintf(e.stdout, "Anthropic-style base URL: %s\n", anthropic)
}

// openStore loads the configuration, finds the database, migrates it and
// opens a pool, for commands that work on the store directly.
func openStore(ctx context.Context, e env) (Config, *store.DB, error) {
	cfg, err := LoadConfig(e.getenv)
	if err != nil {
		return cfg, nil, err
	}
	if cfg.DatabaseURL == "" {
		if cfg.DatabaseURL, err = databaseURL(ctx, e); err != nil {
			return cfg, nil, err
		}
	}
	if err := migrations.Up(cfg.DatabaseURL); err != nil {
		return cfg, nil, err
	}
	db, err := store.Open(ctx, cfg.DatabaseURL)
	return cfg, db, err
}

// runDev is `make run`: it finds or starts PostgreSQL, creates a demo tenant
// on first start (its key is kept in .data/demo.json so later starts can
// print it again; that file is a development convenience only) and serves.
func runDev(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "dev", "dev   (what `make run` runs: PostgreSQL found or started, a demo tenant, the service on PERPETUITY_ADDR)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return UsageError{"usage: perpetuity dev (no arguments)"}
	}
	u, err := databaseURL(ctx, e)
	if err != nil {
		return err
	}
	outer := e.getenv
	e.getenv = func(k string) string {
		if k == "DATABASE_URL" {
			return u
		}
		return outer(k)
	}
	cfg, db, err := openStore(ctx, e)
	if err != nil {
		return err
	}
	nt, err := demoTenant(ctx, db, filepath.Join(dataDir(e), "demo.json"))
	db.Close()
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "Perpetuity is starting. Demo tenant:")
	printTenant(e, cfg, nt, false)
	fmt.Fprintf(e.stdout, "Console: %s/\n", cfg.PublicURL)
	return serve(ctx, e, cfg, nil)
}

func demoTenant(ctx context.Context, db *store.DB, path string) (store.NewTenant, error) {
	var nt store.NewTenant
	if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &nt) == nil && nt.Key != "" {
		if k, err := db.ResolveKey(ctx, nt.Key); err == nil {
			nt.Scope = k.Scope // a demo key saved before keys had scopes is tenant-wide (000009)
			return nt, nil
		} else if !errors.Is(err, store.ErrNotFound) {
			return nt, err
		}
	}
	nt, err := db.CreateTenant(ctx, "demo", "demo")
	if err != nil {
		return nt, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nt, err
	}
	b, _ := json.Marshal(nt)
	return nt, os.WriteFile(path, b, 0o600)
}

const (
	adminCreateSynopsis = "admin create EMAIL   (the password is read from standard input)"
	adminResetSynopsis  = "admin reset-link EMAIL   (prints a link that sets a new password, once)"
	adminUnlockSynopsis = "admin unlock EMAIL   (forgets the account's failed sign-ins)"
	adminUsage          = adminCreateSynopsis + " | " + adminResetSynopsis + " | " + adminUnlockSynopsis
)

// runAdmin is the operator's side of console accounts: creating a platform
// admin, and, since the service sends no mail, the reset link and unlock
// an account that cannot sign in needs (a platform admin's above all,
// which no one in the console can help).
func runAdmin(ctx context.Context, e env, args []string) error {
	if len(args) == 0 {
		return UsageError{"usage: perpetuity " + adminUsage}
	}
	synopsis := map[string]string{"create": adminCreateSynopsis, "reset-link": adminResetSynopsis, "unlock": adminUnlockSynopsis}[args[0]]
	if synopsis == "" {
		return UsageError{"usage: perpetuity " + adminUsage}
	}
	fs := newFlags(e, "admin "+args[0], synopsis)
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return UsageError{"usage: perpetuity " + synopsis}
	}
	email := fs.Arg(0)
	var pw string
	if args[0] == "create" {
		var err error
		if pw, err = readPassword(e.stdin); err != nil {
			return err
		}
	}
	cfg, db, err := openStore(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	switch args[0] {
	case "reset-link":
		link, err := web.IssueResetLink(ctx, db, cfg.PublicURL, email, 24*time.Hour, cliActor())
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no enabled account has the address %s", email)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "Give this link to %s only. It works once, for 24 hours, and ends every session of the account when used; a newer link replaces it.\n", email)
		fmt.Fprintln(e.stdout, link)
		return nil
	case "unlock":
		n, err := web.UnlockAccount(ctx, db, email, cliActor())
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no account has the address %s", email)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "cleared %d failed sign-ins of %s\n", n, email)
		return nil
	}
	if err := web.CreatePlatformAdmin(ctx, db, email, pw); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "platform admin %s created\n", email)
	return nil
}

// readPassword takes the first line of standard input, so the password
// never appears in the process list or shell history.
func readPassword(r io.Reader) (string, error) {
	line, err := bufio.NewReader(io.LimitReader(r, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read password: %w", err)
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		return "", UsageError{"admin create: give the password on standard input"}
	}
	return pw, nil
}
