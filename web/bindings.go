package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/templates"
)

// The binding log (issue 17) on the console: a memory user's and a
// conversation's binding history, and the renames that append to it. A
// rename is a new binding; the next frame's labels show it, and no frame
// already sent is rewritten.

// bindingHistoryLimit bounds the rows a page shows.
const bindingHistoryLimit = 200

// maxLabelLen bounds a display name or title typed in the console.
const maxLabelLen = 200

func bindingRows(bs []store.Binding, now time.Time) []templates.BindingRow {
	out := make([]templates.BindingRow, len(bs))
	for i, b := range bs {
		out[i] = templates.BindingRow{Kind: b.Kind, Subject: b.Subject, Value: b.Value, Source: b.Source,
			When: exact(b.BoundAt), Ago: ago(b.BoundAt, now)}
	}
	return out
}

func (c *Console) userBindings(ctx context.Context, tenantID, userID int64) ([]templates.BindingRow, error) {
	bs, err := c.db.UserBindings(ctx, tenantID, userID, bindingHistoryLimit)
	return bindingRows(bs, time.Now()), err
}

func (c *Console) conversationBindings(ctx context.Context, tenantID, convID int64) ([]templates.BindingRow, error) {
	bs, err := c.db.ConversationBindings(ctx, tenantID, convID, bindingHistoryLimit)
	return bindingRows(bs, time.Now()), err
}

// label reads a typed display name or title: trimmed, one line, storable.
func label(ec echo.Context) (string, bool) {
	v := strings.TrimSpace(ec.FormValue("label"))
	ok := v != "" && len(v) <= maxLabelLen && utf8.ValidString(v) && !strings.ContainsAny(v, "\x00\r\n")
	return v, ok
}

// renameUser binds a memory user's display name.
func (c *Console) renameUser(ec echo.Context, s *session) error {
	id, err := strconv.ParseInt(ec.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return c.notFound(ec)
	}
	v, ok := label(ec)
	if !ok {
		return ec.String(http.StatusBadRequest, "a display name is one line of 1 to 200 bytes")
	}
	err = c.db.RenameUser(ec.Request().Context(), s.TenantID, id, v, "console: "+s.Email)
	if errors.Is(err, store.ErrNotFound) {
		return c.notFound(ec)
	}
	if err != nil {
		return c.internal(ec, err)
	}
	return ec.Redirect(http.StatusSeeOther, "/console/users/"+strconv.FormatInt(id, 10))
}

// renameConversation binds a conversation's title.
func (c *Console) renameConversation(ec echo.Context, s *session) error {
	id, err := strconv.ParseInt(ec.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return c.notFound(ec)
	}
	v, ok := label(ec)
	if !ok {
		return ec.String(http.StatusBadRequest, "a title is one line of 1 to 200 bytes")
	}
	err = c.db.RenameConversation(ec.Request().Context(), s.TenantID, id, v, "console: "+s.Email)
	if errors.Is(err, store.ErrNotFound) {
		return c.notFound(ec)
	}
	if err != nil {
		return c.internal(ec, err)
	}
	return ec.Redirect(http.StatusSeeOther, "/console/conversations/"+strconv.FormatInt(id, 10))
}
