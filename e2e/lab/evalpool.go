package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/app"
	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/importer"
	"github.com/perpetuity/perpetuity/memory/importer/locomo"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations"
)

// poolHelp is --pool's part of the usage: what a distractor is.
const poolHelp = `--pool N asks the questions twice in one run: alone (as without --pool) and
pooled, from a scratch tenant filled with distractor memory users until N
users hold memory. Distractors are copies of the file's samples beyond the
ones asked (all samples when every one is asked; a copy of a sample is then
a distractor for the others), imported in-process through the importer's
capture path. Each copy is deterministic in (sample id, copy number): its two
speakers get fake names from a fixed list (none a speaker of the file),
replaced in the speaker fields and wherever the original name is a whole
word of the text (as written or in capitals; nicknames stay), and its
sessions move back by 30 to 3649 whole days. --dict V derives and flips the
pooled tenant after the fill, so tenant-wide statistics include the
distractors.`

// evalPooled is eval --pool: the run alone, then the run among the
// distractors, same questions and dictionary, reported side by side.
func evalPooled(ctx context.Context, e env, samples []locomo.Sample, opt evalOptions, pf *poolFill, asJSON bool, start time.Time) error {
	base, err := databaseURL(ctx, e)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stderr, "eval: alone")
	var alone, pooled evalResult
	err = inScratchDatabase(ctx, e, base, opt, func(e env, opt evalOptions) (err error) {
		alone, err = runLocomo(ctx, e, samples, opt)
		return err
	})
	if err != nil {
		return fmt.Errorf("alone: %w", err)
	}
	fmt.Fprintf(e.stderr, "eval: pooled (%d memory users)\n", pf.users)
	opt.pool = pf
	err = inScratchDatabase(ctx, e, base, opt, func(e env, opt evalOptions) (err error) {
		pooled, err = runLocomo(ctx, e, samples, opt)
		return err
	})
	if err != nil {
		return fmt.Errorf("pooled: %w", err)
	}
	if asJSON {
		sum := locomo.PoolSummary{Pool: pooled.pool,
			Alone: locomo.Summarize(alone.scored, evalCeilings), Pooled: locomo.Summarize(pooled.scored, evalCeilings)}
		if opt.toolBudget > 0 {
			sum.Alone.Tools, sum.Pooled.Tools = locomo.SummarizeTools(alone.reach), locomo.SummarizeTools(pooled.reach)
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(sum)
	}
	locomo.WritePoolTable(e.stdout, pooled.pool, alone.scored, pooled.scored, evalCeilings, len(samples), time.Since(start))
	if opt.toolBudget > 0 {
		fmt.Fprintln(e.stdout, "\nalone:")
		locomo.WriteToolTable(e.stdout, alone.reach, evalTools, opt.toolBudget)
		fmt.Fprintln(e.stdout, "\npooled:")
		locomo.WriteToolTable(e.stdout, pooled.reach, evalTools, opt.toolBudget)
	}
	return nil
}

// inScratchDatabase runs one run in a database of its own, so that both
// runs' tenants start alike: a new tenant starts on the dictionary most
// tenants of its database serve, and --dict must then derive the pooled
// tenant after the fill (a tenant born on V keeps V's shipped statistics).
func inScratchDatabase(ctx context.Context, e env, base string, opt evalOptions, run func(env, evalOptions) error) error {
	scratch, drop, err := poolDatabase(ctx, base)
	if err != nil {
		return err
	}
	defer drop()
	if scratch != base {
		getenv := e.getenv
		e.getenv = func(k string) string {
			if k == "DATABASE_URL" {
				return scratch
			}
			return getenv(k)
		}
		opt.keepTenant = true
	}
	return run(e, opt)
}

// poolDatabase creates an empty migrated database beside base's and
// returns its URL and a function that drops it: dropping a database is
// instant, where deleting a tenant of 250k items one row (and its foreign
// key checks) at a time takes long. When the role may not create
// databases, the runs work in base and remove their tenants as without
// --pool.
func poolDatabase(ctx context.Context, base string) (string, func(), error) {
	if u, err := url.Parse(base); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return base, func() {}, nil
	}
	dbURL, drop, err := migrations.Scratch(ctx, base, "perpetuity_eval_")
	if errors.Is(err, migrations.ErrNoScratch) {
		return base, drop, nil
	}
	return dbURL, drop, err
}

// poolFillWorkers are the distractor users imported at once. Captures of
// one tenant commit one at a time (each takes the tenant's head row), so
// more workers only overlap the statements before that lock and the text
// analysis, which is what two or three of them already cover.
const poolFillWorkers = 4

// poolFill fills a scratch tenant with distractor users (eval --pool).
type poolFill struct {
	users int             // memory users that hold memory once filled
	file  []locomo.Sample // the whole file; the asked samples are its first ones
	// inspect, when set, looks at the filled tenant before the dictionary
	// step (tests read the stored items with it).
	inspect func(ctx context.Context, db *store.DB, tenantID int64) error
}

const poolCountsSQL = `SELECT count(DISTINCT user_id), count(*) FROM items WHERE tenant_id = $1`

type poolCounts struct {
	Users int
	Items int64
}

// fill imports users minus real distractor users into the tenant, each
// user's conversations in order by one worker, so every stored item (text,
// speaker, times, the user's clock) is the same whatever the scheduling.
func (p *poolFill) fill(ctx context.Context, e env, db *store.DB, tenantID int64, real int, bar *progress) (locomo.PoolInfo, error) {
	info := locomo.PoolInfo{Distractors: p.users - real}
	start := time.Now()
	if info.Distractors > 0 {
		if err := p.importDistractors(ctx, e, tenantID, real, info.Distractors, bar); err != nil {
			return info, err
		}
	}
	info.FillSeconds = time.Since(start).Round(100 * time.Millisecond).Seconds()
	var c []poolCounts
	err := db.InTenantRead(ctx, tenantID, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, poolCountsSQL, tenantID)
		if err != nil {
			return err
		}
		c, err = pgx.CollectRows(rows, pgx.RowToStructByPos[poolCounts])
		return err
	})
	if err != nil || len(c) != 1 {
		return info, fmt.Errorf("count the pool: %w", err)
	}
	info.Users, info.Items = c[0].Users, c[0].Items
	fmt.Fprintf(e.stderr, "eval: pool filled in %.1fs: %d memory users hold %d items (%d distractors)\n",
		info.FillSeconds, info.Users, info.Items, info.Distractors)
	if p.inspect != nil {
		if err := p.inspect(ctx, db, tenantID); err != nil {
			return info, err
		}
	}
	return info, nil
}

func (p *poolFill) importDistractors(ctx context.Context, e env, tenantID int64, real, n int, bar *progress) error {
	pool := locomo.NewPool(p.file, real)
	if pool.Sources() == 0 {
		return fmt.Errorf("--pool: the file has no conversation to copy")
	}
	// The fill has a pool of its own, sized for its workers, whose commits
	// do not wait for the disk: the tenant is scratch and removed at the end.
	u, err := databaseURL(ctx, e)
	if err != nil {
		return err
	}
	fdb, err := store.Open(ctx, withConnParams(u, map[string]string{
		"pool_max_conns": strconv.Itoa(poolFillWorkers + 1), "synchronous_commit": "off",
	}))
	if err != nil {
		return err
	}
	defer fdb.Close()
	eng, err := app.BuildEngine(ctx, fdb, memory.Options{})
	if err != nil {
		return err
	}
	im := importer.New(fdb, eng)

	total := 0
	for k := range n {
		total += pool.Turns(k)
	}
	var done atomic.Int64
	jobs := make(chan int)
	errs := make(chan error, poolFillWorkers)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for range poolFillWorkers {
		wg.Go(func() {
			for k := range jobs {
				d := pool.Distractor(k)
				for _, c := range d.Conversations {
					if _, err := im.Conversation(ctx, memory.Who{TenantID: tenantID}, c); err != nil {
						errs <- fmt.Errorf("pool: distractor %s (copy %d of %s), %s: %w", d.User, d.Copy, d.Source, c.ID, err)
						cancel()
						return
					}
					bar.update("pool", int(done.Add(int64(len(c.Turns)))), total)
				}
			}
		})
	}
feed:
	for k := range n {
		select {
		case jobs <- k:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	bar.done()
	select {
	case err := <-errs:
		return err
	default:
		return ctx.Err()
	}
}

// withConnParams adds connection parameters to a database URL, or to a
// key=value connection string.
func withConnParams(u string, params map[string]string) string {
	if pu, err := url.Parse(u); err == nil && (pu.Scheme == "postgres" || pu.Scheme == "postgresql") {
		q := pu.Query()
		for k, v := range params {
			if q.Get(k) == "" {
				q.Set(k, v)
			}
		}
		pu.RawQuery = q.Encode()
		return pu.String()
	}
	var b strings.Builder
	b.WriteString(u)
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if !strings.Contains(u, k+"=") {
			fmt.Fprintf(&b, " %s=%s", k, params[k])
		}
	}
	return b.String()
}
