package web

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/templates"
)

// Flip and Retire change what a team serves or what it can go back to, so
// their buttons lead to a page that says what the step does; only its
// form carries the confirmation the POST handlers require.

func dictActionPath(v int, action string) string {
	return "/console/dictionaries/" + strconv.Itoa(v) + "/" + action
}

// confirmed reports whether the POST came from a confirmation page.
func confirmed(ec echo.Context) bool { return ec.FormValue("confirm") == "yes" }

// confirmFlip asks before a flip, saying what it does.
func (c *Console) confirmFlip(ec echo.Context, s *session) error {
	return c.confirmDict(ec, s, "flip")
}

// confirmRetire asks before a retirement, saying what is lost.
func (c *Console) confirmRetire(ec echo.Context, s *session) error {
	return c.confirmDict(ec, s, "retire")
}

func (c *Console) confirmDict(ec echo.Context, s *session, action string) error {
	v, ok := versionParam(ec)
	if !ok {
		return c.notFound(ec)
	}
	view, err := c.dictView(ec.Request().Context(), s)
	if err != nil {
		return c.internal(ec, err)
	}
	i := slices.IndexFunc(view.Rows, func(r templates.DictVersionRow) bool { return r.Version == v })
	if i < 0 {
		return c.notFound(ec)
	}
	row := view.Rows[i]
	switch {
	case row.State == templates.DictServing && action == "flip":
		return c.dictFail(ec, s, http.StatusConflict, fmt.Sprintf("This team serves v%d already.", v))
	case row.State == templates.DictServing:
		return c.dictFail(ec, s, http.StatusConflict, fmt.Sprintf("v%d is the version this team serves; flip away from it first.", v))
	case row.State != templates.DictReady:
		return c.dictFail(ec, s, http.StatusConflict, fmt.Sprintf("v%d is not derived for every item yet; derive it first.", v))
	}
	d := dictConfirm(v, view.Active, action, row.Total)
	return c.render(ec, http.StatusOK, templates.DictConfirmPage(c.page(ec, s, d.Title, "dictionaries"), d))
}

// dictConfirm words what flipping to (or retiring) version v does while
// active serves.
func dictConfirm(v, active int, action string, items int64) templates.DictConfirm {
	vs, as := "v"+strconv.Itoa(v), "v"+strconv.Itoa(active)
	if action == "flip" {
		return templates.DictConfirm{Version: v, Action: action, Title: "Flip this team to " + vs + "?", Button: "Flip to " + vs,
			Effects: []string{
				"Every serving process answers this team's requests with " + vs + "'s retrieval rows from its next request: what is found for a question can change.",
				as + " stays derived, so you can flip back to it at once, until you retire it.",
				"Heat, decay and the stored text are not touched.",
			}}
	}
	size := "every item"
	if items > 0 {
		size = templates.Count(items) + " items"
	}
	return templates.DictConfirm{Version: v, Action: action, Danger: true, Title: "Retire " + vs + "?", Button: "Retire " + vs,
		Effects: []string{
			"Retire " + vs + ": you can no longer flip back to it instantly. Using it again needs a new derivation of " + size + ".",
			"This team's " + vs + " retrieval rows and counts are deleted; the dictionary stays loaded for other teams.",
			"This team keeps serving " + as + "; heat, decay and the stored text are not touched.",
		}}
}

// eta is how long a running derivation has left, from its pace so far;
// empty while there is too little to tell.
func eta(r store.Rollout, now time.Time) string {
	elapsed := now.Sub(r.StartedAt)
	if r.Derived <= 0 || r.Total <= r.Derived || elapsed < 2*time.Second {
		return ""
	}
	left := time.Duration(float64(elapsed) * float64(r.Total-r.Derived) / float64(r.Derived))
	switch {
	case left < time.Minute:
		return "less than a minute left"
	case left < 90*time.Minute:
		return "about " + plural(int(left.Round(time.Minute)/time.Minute), "minute") + " left"
	default:
		return "about " + plural(int(left.Round(time.Hour)/time.Hour), "hour") + " left"
	}
}
