package web

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/templates"
)

// redactItem removes one item for good (ops.Redactor: one transaction,
// every serving process drops it before its next scan, the owner's chain
// graph rebuilt, an audit entry that names the item, never its text) once
// the item's id is typed again. It answers with the item's conversation,
// where the turn is gone.
func (c *Console) redactItem(ec echo.Context, s *session) error {
	ctx := ec.Request().Context()
	id, err := strconv.ParseInt(ec.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return c.notFound(ec)
	}
	it, err := c.mem.Item(ctx, s.TenantID, id)
	if err != nil {
		return c.internal(ec, err)
	}
	if strings.TrimPrefix(strings.TrimSpace(ec.FormValue("confirm")), "#") != strconv.FormatInt(id, 10) {
		user, err := c.memoryUserName(ctx, s.TenantID, it.UserID)
		if err != nil {
			return c.internal(ec, err)
		}
		f := templates.RedactForm{ItemID: id, User: user, Error: "The id you typed does not match. Nothing was redacted."}
		return c.render(ec, http.StatusBadRequest, templates.RedactPage(c.page(ec, s, "Redact item #"+strconv.FormatInt(id, 10), "memory"), f))
	}
	if _, err := c.redactor.Redact(ctx, s.TenantID, id, storeActor(ec, s)); err != nil {
		return c.internal(ec, err)
	}
	return c.redirectNotice(ec, "/console/conversations/"+strconv.FormatInt(it.ConversationID, 10), "redact")
}
