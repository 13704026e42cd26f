package web

import (
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/templates"
)

// usageRanges are the ranges the usage page offers, in days; the first is
// the default.
var usageRanges = []int{7, 30, 90}

// usage shows tokens per memory user, per key and per day (members and
// admins): figures about requests, never what they said.
func (c *Console) usage(ec echo.Context, s *session) error {
	days := usageRanges[0]
	if n, err := strconv.Atoi(ec.QueryParam("days")); err == nil && slices.Contains(usageRanges, n) {
		days = n
	}
	today := time.Now().UTC().Truncate(24 * time.Hour)
	since := today.AddDate(0, 0, -(days - 1))
	u, err := c.db.Usage(ec.Request().Context(), s.TenantID, since)
	if err != nil {
		return c.internal(ec, err)
	}
	return c.render(ec, http.StatusOK, templates.UsagePage(c.page(ec, s, "Usage", "usage"), buildUsage(u, since, days)))
}

// buildUsage formats the figures and spreads the days over the whole
// range, so a quiet day shows as zero instead of vanishing.
func buildUsage(u store.TenantUsage, since time.Time, days int) templates.Usage {
	v := templates.Usage{Days: days, Ranges: usageRanges, Total: usageRow("total", "Total", "", u.Total)}
	for _, r := range u.Users {
		name := r.User
		if r.UserID == 0 {
			name = "no memory user"
		}
		v.Users = append(v.Users, usageRow(strconv.FormatInt(r.UserID, 10), name, "", r.UsageFigures))
	}
	for _, k := range u.Keys {
		label, sub := k.Name, ""
		switch {
		case k.KeyID == 0:
			label = "no key recorded"
		case label == "":
			label = "unnamed key"
		}
		if k.KeyID != 0 {
			sub = k.Prefix + "… · " + k.User
		}
		v.Keys = append(v.Keys, usageRow(strconv.FormatInt(k.KeyID, 10), label, sub, k.UsageFigures))
	}
	byDay := make(map[string]store.UsageFigures, len(u.Days))
	for _, d := range u.Days {
		byDay[d.Day.Format(time.DateOnly)] = d.UsageFigures
	}
	for i := range days {
		day := since.AddDate(0, 0, i).Format(time.DateOnly)
		f := byDay[day]
		v.Chart.Days = append(v.Chart.Days, templates.UsageDay{Label: day[5:], Frame: float64(f.Frame), Harness: float64(f.Harness)})
		v.PerDay = append(v.PerDay, usageRow(day, day, "", f))
	}
	slices.Reverse(v.PerDay)
	return v
}

func usageRow(id, label, sub string, f store.UsageFigures) templates.UsageRow {
	return templates.UsageRow{
		ID: id, Label: label, Sub: sub, Requests: templates.Count(f.Requests), ErrorRate: share(f.Errors, f.Requests),
		TokensIn: templates.Count(f.TokensIn), Frame: templates.Count(f.Frame), Harness: templates.Count(f.Harness),
		TokensOut: templates.Count(f.TokensOut),
	}
}
