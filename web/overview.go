package web

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/templates"
)

// Days are UTC days; the range is the last N of them including today.
const (
	overviewRequestsSQL = `
SELECT (date_trunc('day', at AT TIME ZONE 'UTC'))::date, count(*),
       coalesce(sum(tokens_in), 0)::bigint, coalesce(sum(tokens_out), 0)::bigint,
       coalesce(avg(frame_tokens), 0)::float8
FROM requests WHERE tenant_id = $1 AND at >= $2
GROUP BY 1 ORDER BY 1`
	overviewItemsSQL = `
SELECT (date_trunc('day', born_at AT TIME ZONE 'UTC'))::date, count(*)
FROM items WHERE tenant_id = $1 AND born_at >= $2
GROUP BY 1 ORDER BY 1`
	overviewTotalsSQL = `
SELECT (SELECT count(*) FROM items WHERE tenant_id = $1),
       (SELECT count(*) FROM items WHERE tenant_id = $1 AND born_at < $2),
       (SELECT count(*) FROM memory_users WHERE tenant_id = $1),
       (SELECT count(*) FROM api_keys WHERE tenant_id = $1 AND revoked_at IS NULL)`
)

type dayRequests struct {
	Day       time.Time
	Requests  int64
	TokensIn  int64
	TokensOut int64
	Frame     float64
}

type dayItems struct {
	Day   time.Time
	Items int64
}

type overviewData struct {
	since    time.Time
	requests []dayRequests
	items    []dayItems
	total    int64
	before   int64
	users    int64
	liveKeys int64
}

func (c *Console) overviewData(ctx context.Context, tenantID int64, since time.Time) (overviewData, error) {
	d := overviewData{since: since}
	err := c.db.InTenantRead(ctx, tenantID, func(tx pgx.Tx) error {
		r, err := tx.Query(ctx, overviewRequestsSQL, tenantID, since)
		if err != nil {
			return err
		}
		if d.requests, err = pgx.CollectRows(r, pgx.RowToStructByPos[dayRequests]); err != nil {
			return err
		}
		r, err = tx.Query(ctx, overviewItemsSQL, tenantID, since)
		if err != nil {
			return err
		}
		if d.items, err = pgx.CollectRows(r, pgx.RowToStructByPos[dayItems]); err != nil {
			return err
		}
		return tx.QueryRow(ctx, overviewTotalsSQL, tenantID, since).Scan(&d.total, &d.before, &d.users, &d.liveKeys)
	})
	return d, err
}

// buildOverview spreads the per-day rows over every day of the range, so
// quiet days show as zero rather than vanish.
func buildOverview(d overviewData, days int) templates.Overview {
	labels := make([]string, days)
	index := make(map[string]int, days)
	for i := range days {
		day := d.since.AddDate(0, 0, i).Format("2006-01-02")
		labels[i] = day[5:]
		index[day] = i
	}
	reqs, in, out, frame := make([]float64, days), make([]float64, days), make([]float64, days), make([]float64, days)
	var sumReq, sumIn, sumOut int64
	for _, r := range d.requests {
		i, ok := index[r.Day.Format("2006-01-02")]
		if !ok {
			continue
		}
		reqs[i], in[i], out[i], frame[i] = float64(r.Requests), float64(r.TokensIn), float64(r.TokensOut), r.Frame
		sumReq += r.Requests
		sumIn += r.TokensIn
		sumOut += r.TokensOut
	}
	stored := make([]float64, days)
	perDay := make([]int64, days)
	for _, it := range d.items {
		if i, ok := index[it.Day.Format("2006-01-02")]; ok {
			perDay[i] = it.Items
		}
	}
	run := d.before
	for i := range days {
		run += perDay[i]
		stored[i] = float64(run)
	}
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	return templates.Overview{
		Days: days,
		Stats: []templates.Stat{
			{ID: "requests", Label: "requests", Value: n(sumReq)},
			{ID: "tokens-in", Label: "tokens in", Value: n(sumIn)},
			{ID: "tokens-out", Label: "tokens out", Value: n(sumOut)},
			{ID: "items", Label: "stored items", Value: n(d.total)},
			{ID: "users", Label: "memory users", Value: n(d.users)},
			{ID: "keys", Label: "live keys", Value: n(d.liveKeys)},
		},
		Charts: []templates.Chart{
			{ID: "requests", Title: "Requests per day", Unit: "requests", Labels: labels,
				Series: []templates.Series{{Name: "requests", Color: "#2563eb", Values: reqs}}},
			{ID: "tokens", Title: "Tokens per day", Unit: "tokens", Labels: labels,
				Series: []templates.Series{{Name: "in", Color: "#0891b2", Values: in}, {Name: "out", Color: "#ea580c", Values: out}}},
			{ID: "items", Title: "Stored items", Unit: "items", Labels: labels,
				Series: []templates.Series{{Name: "items", Color: "#7c3aed", Values: stored}}},
			{ID: "frame", Title: "Average frame size", Unit: "tokens", Labels: labels,
				Series: []templates.Series{{Name: "frame tokens", Color: "#dc2626", Values: frame}}},
		},
	}
}

func (c *Console) overview(ec echo.Context, s *session) error {
	days := 14
	if n, err := strconv.Atoi(ec.QueryParam("days")); err == nil && n >= 1 && n <= 365 {
		days = n
	}
	today := time.Now().UTC().Truncate(24 * time.Hour)
	since := today.AddDate(0, 0, -(days - 1))
	d, err := c.overviewData(ec.Request().Context(), s.TenantID, since)
	if err != nil {
		return c.internal(ec, err)
	}
	return c.render(ec, http.StatusOK, templates.OverviewPage(c.page(ec, s, "Overview", "overview"), buildOverview(d, days)))
}

// connect shows the proxy URLs and snippets (the key itself only at
// creation time) and the default user.
func (c *Console) connect(ec echo.Context, s *session) error {
	return c.render(ec, http.StatusOK, templates.ConnectPage(c.page(ec, s, "Connect", "connect"), c.connectFor("", "", ""), false))
}
