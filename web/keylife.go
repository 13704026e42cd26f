package web

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/templates"
)

// Key lifecycle in the console: an end chosen when a key is made, rotation
// (a new key shown once, the old one ending after a grace period) and a
// key's own limits. Each change is audited and, through Config.KeyChanged,
// reaches this process's proxy before the key's next request.

// expiryDay is how the create form writes an end: a day, the key being
// refused from 00:00 UTC on it.
const expiryDay = "2006-01-02"

// maxKeyLife bounds an end, so a typo in the year is caught.
const maxKeyLife = 10 * 366 * 24 * time.Hour

// parseKeyExpiry reads the create form's end: empty is never; otherwise a
// day after today (UTC). The second result is what to tell the admin.
func parseKeyExpiry(field string, now time.Time) (*time.Time, string) {
	if field == "" || field == "never" {
		return nil, ""
	}
	d, err := time.Parse(expiryDay, field)
	if err != nil {
		return nil, "Give the expiry as a date (YYYY-MM-DD), or leave it empty for a key that never expires."
	}
	if !d.After(now) {
		return nil, "Choose an expiry date after today: the key is refused from 00:00 UTC on that day."
	}
	if d.Sub(now) > maxKeyLife {
		return nil, "Choose an expiry date within ten years, or leave it empty for a key that never expires."
	}
	return &d, ""
}

// keyEnd words a key's end for the keys table.
func keyEnd(end, rotated *time.Time, now time.Time) string {
	switch {
	case end == nil:
		return "never"
	case !now.Before(*end):
		return "expired " + exact(*end)
	case rotated != nil:
		return "rotated, old key valid until " + exact(*end)
	}
	return "expires in " + until(end.Sub(now)) + " (" + exact(*end) + ")"
}

// until words a wait, rounded down to its largest unit.
func until(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "under a minute"
	case d < time.Hour:
		return plural(int(d/time.Minute), "minute")
	case d < 48*time.Hour:
		return plural(int(d/time.Hour), "hour")
	}
	return plural(int(d/(24*time.Hour)), "day")
}

// limitsLabel is a key's own limits, or that it has the team's.
func limitsLabel(l store.KeyLimits) string {
	var parts []string
	if l.RequestsPerMinute != nil {
		parts = append(parts, limitWord(int64(*l.RequestsPerMinute))+" req/min")
	}
	if l.TokensPerMinute != nil {
		parts = append(parts, limitWord(int64(*l.TokensPerMinute))+" tok/min")
	}
	if l.TokensPerDay != nil {
		parts = append(parts, limitWord(*l.TokensPerDay)+" tok/day")
	}
	if len(parts) == 0 {
		return "team's"
	}
	return strings.Join(parts, " · ") + " (others team's)"
}

func limitWord(n int64) string {
	if n == 0 {
		return "unlimited"
	}
	return templates.Count(n)
}

// keyChanged tells this process's proxy to forget its copy of a key.
func (c *Console) keyChanged(keyID int64) {
	if c.cfg.KeyChanged != nil {
		c.cfg.KeyChanged(keyID)
	}
}

// keyParam is the live key named by :id, as the keys table shows it; ok
// false when the tenant has no such key.
func (c *Console) keyParam(ec echo.Context, s *session) (templates.KeyRow, bool, error) {
	id, err := strconv.ParseInt(ec.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return templates.KeyRow{}, false, nil
	}
	rows, err := c.listKeys(ec.Request().Context(), s.TenantID, 0, id)
	if err != nil || len(rows) != 1 {
		return templates.KeyRow{}, false, err
	}
	return rows[0], true, nil
}

type grace struct {
	value string
	label string
	d     time.Duration
}

// graces are the rotation form's grace periods.
func graces() []grace {
	return []grace{{"1h", "1 hour", time.Hour}, {"1d", "1 day", 24 * time.Hour}, {"7d", "7 days", 7 * 24 * time.Hour}}
}

func graceOptions(chosen string) []templates.Option {
	gs := graces()
	out := make([]templates.Option, len(gs))
	for i, g := range gs {
		out[i] = templates.Option{Value: g.value, Label: g.label, Selected: g.value == chosen}
	}
	return out
}

// confirmRotate asks before a rotation, saying its effect, with the grace
// period to choose.
func (c *Console) confirmRotate(ec echo.Context, s *session) error {
	k, ok, err := c.keyParam(ec, s)
	if err != nil {
		return c.internal(ec, err)
	}
	if !ok {
		return c.notFound(ec)
	}
	if !k.Rotatable {
		return c.fail(ec, http.StatusConflict, "This key cannot be rotated: it is revoked, expired or already rotated.")
	}
	v := templates.KeyRotate{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Graces: graceOptions("")}
	return c.render(ec, http.StatusOK, templates.KeyRotatePage(c.page(ec, s, "Rotate key", "keys"), v))
}

// rotateKey makes the replacement, ends the old key after the grace
// period, and sends the browser to the page that shows the new key once.
func (c *Console) rotateKey(ec echo.Context, s *session) error {
	ctx := ec.Request().Context()
	k, ok, err := c.keyParam(ec, s)
	if err != nil {
		return c.internal(ec, err)
	}
	if !ok {
		return c.notFound(ec)
	}
	if k.Scope == store.ScopeTenant.Label() && !s.admin() {
		// The replacement of a tenant-wide key is one too (createKey).
		return c.fail(ec, http.StatusForbidden, "Only an admin can rotate a tenant-wide key: its replacement reads every memory user's memory through the proxy.")
	}
	field := ec.FormValue("grace")
	period := time.Duration(-1)
	for _, g := range graces() {
		if g.value == field {
			period = g.d
		}
	}
	if period < 0 || !confirmed(ec) {
		v := templates.KeyRotate{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Graces: graceOptions(field),
			Error: "Choose how long the old key keeps working."}
		return c.render(ec, http.StatusBadRequest, templates.KeyRotatePage(c.page(ec, s, "Rotate key", "keys"), v))
	}
	r, err := c.db.RotateKey(ctx, s.TenantID, k.ID, period)
	if errors.Is(err, store.ErrNotFound) {
		return c.fail(ec, http.StatusConflict, "This key cannot be rotated: it is revoked, expired or already rotated.")
	}
	if err != nil {
		return c.internal(ec, err)
	}
	c.keyChanged(k.ID)
	prefix := store.ShortPrefix(r.Key)
	c.recordOrLog(ctx, actor(ec, s, "key.rotate", k.Name, map[string]any{
		"key_id": k.ID, "key_prefix": k.Prefix, "new_key_id": r.NewID, "new_key_prefix": prefix,
		"grace": field, "old_valid_until": exact(r.OldValidUntil),
	}))
	id, err := c.putReveal(ec, s.TenantID, store.RevealKey, r.Key, map[string]string{
		"name": r.Name, "prefix": prefix, "user": k.User, "scope": string(r.Scope),
		"old_prefix": k.Prefix, "old_until": exact(r.OldValidUntil),
	})
	if err != nil {
		return c.internal(ec, err)
	}
	return redirectToReveal(ec, newKeyPrefix, id)
}

// rotatedNote is what the new-key page says of a rotation's old key.
func rotatedNote(about map[string]string) string {
	if about["old_prefix"] == "" {
		return ""
	}
	return "Rotated: the old key " + about["old_prefix"] + "… keeps working until " + about["old_until"] + ", then is refused as expired."
}

// keyLimitsForm shows a key's own limits for editing.
func (c *Console) keyLimitsForm(ec echo.Context, s *session) error {
	k, ok, err := c.keyParam(ec, s)
	if err != nil {
		return c.internal(ec, err)
	}
	if !ok || k.Revoked != "" {
		return c.notFound(ec)
	}
	own, err := c.keyOwnLimits(ec, s, k.ID)
	if err != nil {
		return c.internal(ec, err)
	}
	v, err := c.limitsView(ec, s, k)
	if err != nil {
		return c.internal(ec, err)
	}
	v.RPM, v.TPM, v.TPD = intField(own.RequestsPerMinute), intField(own.TokensPerMinute), int64Field(own.TokensPerDay)
	return c.render(ec, http.StatusOK, templates.KeyLimitsPage(c.page(ec, s, "Key limits", "keys"), v))
}

// saveKeyLimits validates and stores a key's own limits.
func (c *Console) saveKeyLimits(ec echo.Context, s *session) error {
	ctx := ec.Request().Context()
	k, ok, err := c.keyParam(ec, s)
	if err != nil {
		return c.internal(ec, err)
	}
	if !ok || k.Revoked != "" {
		return c.notFound(ec)
	}
	var l store.KeyLimits
	var problem string
	rpm, tpm, tpd := strings.TrimSpace(ec.FormValue("rpm")), strings.TrimSpace(ec.FormValue("tpm")), strings.TrimSpace(ec.FormValue("tpd"))
	for _, f := range []struct {
		in, what string
		max      int64
		set      func(int64)
	}{
		{rpm, "requests per minute", math.MaxInt32, func(n int64) { v := int(n); l.RequestsPerMinute = &v }},
		{tpm, "tokens per minute", math.MaxInt32, func(n int64) { v := int(n); l.TokensPerMinute = &v }},
		{tpd, "tokens per day", math.MaxInt64, func(n int64) { l.TokensPerDay = &n }},
	} {
		if f.in == "" {
			continue
		}
		n, err := strconv.ParseInt(strings.ReplaceAll(f.in, ",", ""), 10, 64)
		if err != nil || n < 0 || n > f.max {
			if problem == "" {
				problem = "Give " + f.what + " as a whole number, 0 for unlimited, or leave it empty for the team's limit."
			}
			continue
		}
		f.set(n)
	}
	if problem != "" {
		v, err := c.limitsView(ec, s, k)
		if err != nil {
			return c.internal(ec, err)
		}
		v.RPM, v.TPM, v.TPD, v.Error = rpm, tpm, tpd, problem
		return c.render(ec, http.StatusBadRequest, templates.KeyLimitsPage(c.page(ec, s, "Key limits", "keys"), v))
	}
	before, err := c.keyOwnLimits(ec, s, k.ID)
	if err != nil {
		return c.internal(ec, err)
	}
	if err := c.db.SetKeyLimits(ctx, s.TenantID, k.ID, l); errors.Is(err, store.ErrNotFound) {
		return c.notFound(ec)
	} else if err != nil {
		return c.internal(ec, err)
	}
	c.keyChanged(k.ID)
	c.recordOrLog(ctx, actor(ec, s, "key.limits", k.Name, map[string]any{
		"key_id": k.ID, "key_prefix": k.Prefix, "before": limitsLabel(before), "after": limitsLabel(l),
	}))
	return c.redirectNotice(ec, "/console/keys", "key-limits")
}

// keyOwnLimits reads a key's own limits.
func (c *Console) keyOwnLimits(ec echo.Context, s *session, keyID int64) (store.KeyLimits, error) {
	return c.db.KeyOwnLimits(ec.Request().Context(), s.TenantID, keyID)
}

// limitsView is the limits form for a key, with the team's limits as the
// placeholders (the service defaults when the team has none: shown as
// "team default").
func (c *Console) limitsView(ec echo.Context, s *session, k templates.KeyRow) (templates.KeyLimits, error) {
	v := templates.KeyLimits{ID: k.ID, Name: k.Name, Prefix: k.Prefix,
		TeamRPM: "team default", TeamTPM: "team default", TeamTPD: "team default"}
	t, err := c.db.TenantLimits(ec.Request().Context(), s.TenantID)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return v, err
	default:
		v.TeamRPM = "team: " + limitWord(int64(t.RequestsPerMinute))
		v.TeamTPM = "team: " + limitWord(int64(t.TokensPerMinute))
		v.TeamTPD = "team: " + limitWord(t.TokensPerDay)
	}
	return v, nil
}

func intField(p *int) string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(*p)
}

func int64Field(p *int64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatInt(*p, 10)
}
