package web

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/guard"
	"github.com/perpetuity/perpetuity/memory/ops"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/templates"
)

// Dictionary rollouts from the console (DESIGN §8): loading a version is
// platform-wide and dark, so only platform admins do it; deriving, flipping
// and retiring change one team's serving, so its admins do them. A
// derivation runs in the background of the process that started it; its
// progress lives in the rollout row, so any process can show it and a
// derivation that died midway shows as stopped, to be resumed.

// dictUploadRoute is the one console route that takes a large body.
const dictUploadRoute = "/console/dictionaries"

// deriveLease is how long a console derivation keeps its claim without
// progress; a process that dies frees the rollout after it.
const deriveLease = 15 * time.Second

func (c *Console) dictionaries(ec echo.Context, s *session) error {
	v, err := c.dictView(ec.Request().Context(), s)
	if err != nil {
		return c.internal(ec, err)
	}
	return c.render(ec, http.StatusOK, templates.DictionariesPage(c.page(ec, s, "Dictionaries", "dictionaries"), v))
}

func (c *Console) dictView(ctx context.Context, s *session) (templates.Dictionaries, error) {
	ds, err := c.db.Dictionaries(ctx)
	if err != nil {
		return templates.Dictionaries{}, err
	}
	st, err := c.db.DictStatus(ctx, s.TenantID)
	if err != nil {
		return templates.Dictionaries{}, err
	}
	v := templates.Dictionaries{Active: st.Active, CanUpload: s.Role == templates.RolePlatformAdmin}
	loaded := map[int]bool{}
	for _, d := range ds {
		loaded[d.Version] = true
		row := templates.DictVersionRow{Version: d.Version, Name: d.Name, Entries: d.Entries, Loaded: exact(d.LoadedAt)}
		rolloutState(&row, st, time.Now())
		v.Rows = append(v.Rows, row)
	}
	if v.CanUpload {
		for _, b := range dict.BuiltinVersions() {
			if !loaded[b] {
				v.Shipped = append(v.Shipped, templates.Option{Value: strconv.Itoa(b), Label: "v" + strconv.Itoa(b)})
			}
		}
	}
	return v, nil
}

// rolloutState fills a row's state from the tenant's status.
func rolloutState(row *templates.DictVersionRow, st store.DictStatus, now time.Time) {
	if row.Version == st.Active {
		row.State = templates.DictServing
		return
	}
	i := slices.IndexFunc(st.Rollouts, func(r store.Rollout) bool { return r.Version == row.Version })
	if i < 0 {
		row.State = templates.DictNone
		return
	}
	r := st.Rollouts[i]
	row.Percent, row.Derived, row.Total = int(100*r.Fraction()), r.Derived, r.Total
	switch {
	case r.State == store.RolloutReady:
		row.State = templates.DictReady
	case r.LeaseUntil != nil && r.LeaseUntil.After(now):
		row.State = templates.DictDeriving
		row.ETA = eta(r, now)
	default:
		row.State = templates.DictStalled
	}
}

func (c *Console) dictFail(ec echo.Context, s *session, status int, msg string) error {
	v, err := c.dictView(ec.Request().Context(), s)
	if err != nil {
		return c.internal(ec, err)
	}
	v.Error = msg
	return c.render(ec, status, templates.DictionariesPage(c.page(ec, s, "Dictionaries", "dictionaries"), v))
}

// uploadDictionary loads a dictionary file, or a version shipped in the
// binary, dark.
func (c *Console) uploadDictionary(ec echo.Context, s *session) error {
	ctx := ec.Request().Context()
	by := storeActor(ec, s)
	if b := ec.FormValue("builtin"); b != "" {
		v, err := strconv.Atoi(b)
		if err != nil || !slices.Contains(dict.BuiltinVersions(), v) {
			return c.dictFail(ec, s, http.StatusBadRequest, "Choose a shipped version.")
		}
		d, err := dict.Builtin(v)
		if err != nil {
			return c.internal(ec, err)
		}
		if _, err := c.db.UploadDictionary(ctx, d, by); err != nil {
			return c.internal(ec, err)
		}
		return c.redirectNotice(ec, "/console/dictionaries", "upload")
	}
	fh, err := ec.FormFile("file")
	if err != nil {
		return c.dictFail(ec, s, http.StatusBadRequest, "Choose a dictionary file or a shipped version.")
	}
	f, err := fh.Open()
	if err != nil {
		return c.internal(ec, err)
	}
	defer f.Close()
	_, err = ops.Upload(ctx, c.db, io.Reader(f), by)
	switch {
	case errors.Is(err, store.ErrDictionaryConflict):
		return c.dictFail(ec, s, http.StatusConflict, "A different dictionary with this version is loaded already. A changed dictionary is a new version.")
	case errors.Is(err, ops.ErrBadDictionary):
		// The parser's message names the line at fault in the admin's own file.
		return c.dictFail(ec, s, http.StatusBadRequest, err.Error())
	case err != nil:
		return c.internal(ec, err)
	}
	return c.redirectNotice(ec, "/console/dictionaries", "upload")
}

func versionParam(ec echo.Context) (int, bool) {
	v, err := strconv.Atoi(ec.Param("version"))
	return v, err == nil && v > 0
}

// deriveDictionary starts (or resumes) the tenant's derivation in the
// background and answers at once; the page then polls its progress.
func (c *Console) deriveDictionary(ec echo.Context, s *session) error {
	ctx := ec.Request().Context()
	v, ok := versionParam(ec)
	if !ok {
		return c.notFound(ec)
	}
	by := storeActor(ec, s)
	r, err := c.db.StartDerive(ctx, s.TenantID, v, by)
	switch {
	case errors.Is(err, store.ErrActiveVersion):
		return c.dictFail(ec, s, http.StatusConflict, fmt.Sprintf("This team serves v%d already.", v))
	case err != nil:
		return c.internal(ec, err)
	}
	if r.State == store.RolloutDeriving {
		host, _ := os.Hostname()
		l := store.Lease{Owner: fmt.Sprintf("console@%s:%d:%s", host, os.Getpid(), rand.Text()[:6]), TTL: deriveLease}
		// Claimed here, so the page shows it running from the first poll;
		// another live worker keeps it, and nothing more is started.
		switch _, err := c.db.ClaimDerive(ctx, s.TenantID, v, l); {
		case errors.Is(err, store.ErrLeaseHeld):
		case err != nil:
			return c.internal(ec, err)
		default:
			go c.derive(context.WithoutCancel(ctx), s.TenantID, v, l, by)
		}
	}
	if isHTMX(ec) {
		return c.rolloutFragment(ec, s, v)
	}
	return c.redirectNotice(ec, "/console/dictionaries", "derive")
}

// derive runs one derivation to the end; it outlives the request that
// started it. If the process stops, the rollout shows as stopped midway
// and resumes from its last batch.
func (c *Console) derive(ctx context.Context, tenantID int64, v int, l store.Lease, by store.Actor) {
	d := &ops.Deriver{St: c.db, Lease: l.TTL, Owner: l.Owner}
	// Off the request's goroutine: a panic stops this derivation (its
	// lease lapses and it resumes), not the process.
	if err := guard.Run(func() error { _, err := d.Derive(ctx, tenantID, v, by); return err }); err != nil {
		c.log.Error("dictionary derivation stopped", "tenant", tenantID, "version", v, "err", err)
	}
}

// dictProgress is the polled fragment of one version's rollout.
func (c *Console) dictProgress(ec echo.Context, s *session) error {
	v, ok := versionParam(ec)
	if !ok {
		return c.notFound(ec)
	}
	return c.rolloutFragment(ec, s, v)
}

func (c *Console) rolloutFragment(ec echo.Context, s *session, v int) error {
	ctx := ec.Request().Context()
	ds, err := c.db.Dictionaries(ctx)
	if err != nil {
		return c.internal(ec, err)
	}
	i := slices.IndexFunc(ds, func(d store.DictInfo) bool { return d.Version == v })
	if i < 0 {
		return c.notFound(ec)
	}
	st, err := c.db.DictStatus(ctx, s.TenantID)
	if err != nil {
		return c.internal(ec, err)
	}
	row := templates.DictVersionRow{Version: v, Name: ds[i].Name, Entries: ds[i].Entries}
	rolloutState(&row, st, time.Now())
	return c.render(ec, http.StatusOK, templates.RolloutCell(c.page(ec, s, "", ""), row))
}

// flipDictionary makes a derived version the one this team serves, in one
// transaction every serving process follows before its next scan. Only
// the confirmation page's form does it; anything else is sent there.
func (c *Console) flipDictionary(ec echo.Context, s *session) error {
	v, ok := versionParam(ec)
	if !ok {
		return c.notFound(ec)
	}
	if !confirmed(ec) {
		return ec.Redirect(http.StatusSeeOther, dictActionPath(v, "flip"))
	}
	_, err := c.db.Flip(ec.Request().Context(), s.TenantID, v, storeActor(ec, s))
	switch {
	case errors.Is(err, store.ErrNotDerived):
		return c.dictFail(ec, s, http.StatusConflict, fmt.Sprintf("v%d is not derived for every item yet; derive it first.", v))
	case err != nil:
		return c.internal(ec, err)
	}
	return c.redirectNotice(ec, "/console/dictionaries", "flip")
}

// retireDictionary drops a kept version's rows, after its confirmation
// page.
func (c *Console) retireDictionary(ec echo.Context, s *session) error {
	v, ok := versionParam(ec)
	if !ok {
		return c.notFound(ec)
	}
	if !confirmed(ec) {
		return ec.Redirect(http.StatusSeeOther, dictActionPath(v, "retire"))
	}
	_, err := c.db.Retire(ec.Request().Context(), s.TenantID, v, storeActor(ec, s))
	switch {
	case errors.Is(err, store.ErrActiveVersion):
		return c.dictFail(ec, s, http.StatusConflict, fmt.Sprintf("v%d is the version this team serves; flip away from it first.", v))
	case err != nil:
		return c.internal(ec, err)
	}
	return c.redirectNotice(ec, "/console/dictionaries", "retire")
}
