package web

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/templates"
)

// purgeUser removes a memory user's whole memory (store.PurgeUser: one
// transaction, every serving process drops it before its next scan, an
// audit entry without content) once the user's name is typed again.
func (c *Console) purgeUser(ec echo.Context, s *session) error {
	ctx := ec.Request().Context()
	id, err := strconv.ParseInt(ec.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return c.notFound(ec)
	}
	us, err := c.listUsers(ctx, s.TenantID, id)
	if err != nil {
		return c.internal(ec, err)
	}
	if len(us) != 1 {
		return c.notFound(ec)
	}
	u := us[0]
	if strings.TrimSpace(ec.FormValue("confirm")) != u.Name {
		f := templates.PurgeForm{UserID: u.ID, Name: u.Name, Items: u.Items,
			Error: "The name you typed does not match. Nothing was purged."}
		return c.render(ec, http.StatusBadRequest, templates.PurgePage(c.page(ec, s, "Purge "+u.Name, "users"), f))
	}
	if _, err := c.db.PurgeUser(ctx, s.TenantID, id, storeActor(ec, s)); err != nil {
		return c.internal(ec, err)
	}
	return c.redirectNotice(ec, "/console/users/"+strconv.FormatInt(id, 10), "purge")
}
