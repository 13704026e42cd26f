package web

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory/guard"
	"github.com/perpetuity/perpetuity/memory/ops"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/templates"
)

// Integrity reports from the console. A check runs in the background of
// this process, against this process's resident arena (SetArenas), and
// its report page polls until it is done; reports are kept and listed.

const (
	integrityListed     = 50
	violationsListed    = 500
	integrityStillFresh = 10 * time.Minute // an unfinished report younger than this is still running
)

// SetArenas gives the console the serving engine, so a check run here also
// compares the resident arenas this process serves from with the store.
// Without it that invariant is reported as not checked. Call it before
// serving.
func (c *Console) SetArenas(a ops.Arenas) { c.arenas = a }

func reportRow(r store.IntegrityReport) templates.IntegrityRow {
	row := templates.IntegrityRow{ID: r.ID, Started: exact(r.StartedAt), Actor: r.Actor, Items: r.Items,
		Violations: r.Violations, Error: r.Error}
	if r.FinishedAt != nil {
		row.Finished = exact(*r.FinishedAt)
	}
	for _, c := range ops.Results(r) {
		row.Checks++
		if c.Failed() {
			row.Failed++
		}
	}
	return row
}

// checkRows are a report's checks, one line each, in words.
func checkRows(r store.IntegrityReport) []templates.CheckRow {
	var out []templates.CheckRow
	for _, c := range ops.Results(r) {
		row := templates.CheckRow{Name: c.Name, Means: c.Means, Violations: c.Violations, Why: c.NotDone, Outcome: templates.CheckPass}
		switch {
		case c.Failed():
			row.Outcome = templates.CheckFail
		case c.Skipped:
			row.Outcome = templates.CheckSkipped
		case c.NotDone != "":
			row.Outcome = templates.CheckPartial
		}
		out = append(out, row)
	}
	return out
}

func (c *Console) integrity(ec echo.Context, s *session) error {
	reps, err := c.db.IntegrityReports(ec.Request().Context(), s.TenantID, integrityListed)
	if err != nil {
		return c.internal(ec, err)
	}
	v := templates.Integrity{}
	for _, r := range reps {
		v.Rows = append(v.Rows, reportRow(r))
	}
	return c.render(ec, http.StatusOK, templates.IntegrityPage(c.page(ec, s, "Integrity", "integrity"), v))
}

// runIntegrity starts a check and shows its report, which fills in when
// the check is done. A check still running is shown instead of starting
// another.
func (c *Console) runIntegrity(ec echo.Context, s *session) error {
	ctx := ec.Request().Context()
	reps, err := c.db.IntegrityReports(ctx, s.TenantID, 1)
	if err != nil {
		return c.internal(ec, err)
	}
	if len(reps) == 1 && reps[0].FinishedAt == nil && time.Since(reps[0].StartedAt) < integrityStillFresh {
		return ec.Redirect(http.StatusSeeOther, "/console/integrity/"+strconv.FormatInt(reps[0].ID, 10))
	}
	by := storeActor(ec, s)
	id, err := c.db.StartIntegrityReport(ctx, s.TenantID, by)
	if err != nil {
		return c.internal(ec, err)
	}
	go func(ctx context.Context, tenantID int64) {
		ck := &ops.Checker{St: c.db, Arenas: c.arenas}
		if err := guard.Run(func() error { _, _, err := ck.Run(ctx, tenantID, id, by); return err }); err != nil {
			c.log.Error("integrity check failed", "tenant", tenantID, "report", id, "err", err)
		}
	}(context.WithoutCancel(ctx), s.TenantID)
	return ec.Redirect(http.StatusSeeOther, "/console/integrity/"+strconv.FormatInt(id, 10))
}

func (c *Console) integrityReport(ec echo.Context, s *session) error {
	id, err := strconv.ParseInt(ec.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return c.notFound(ec)
	}
	rep, vs, err := c.db.IntegrityReportByID(ec.Request().Context(), s.TenantID, id, violationsListed)
	if err != nil {
		return c.internal(ec, err)
	}
	d := templates.IntegrityDetail{Report: reportRow(rep), More: rep.Violations - int64(len(vs))}
	if rep.DictVersion != nil && rep.HeadSeq != nil {
		d.Serving = fmt.Sprintf("serving v%d at log position %s", *rep.DictVersion, templates.Count(*rep.HeadSeq))
	}
	d.Checks = checkRows(rep)
	for _, v := range vs {
		row := templates.ViolationRow{Invariant: v.Invariant, Detail: v.Detail, Rows: string(v.Rows)}
		if v.ItemID != nil {
			row.Item = strconv.FormatInt(*v.ItemID, 10)
		}
		d.Violations = append(d.Violations, row)
	}
	return c.render(ec, http.StatusOK, templates.IntegrityReportPage(c.page(ec, s, fmt.Sprintf("Integrity report #%d", id), "integrity"), d))
}
