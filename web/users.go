package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/templates"
)

// Last activity is the latest of: a request seen, an item stored.
const listUsersSQL = `
SELECT u.id, u.name, u.display_name, u.clock,
       coalesce(i.items, 0), coalesce(cv.convs, 0),
       greatest(u.last_seen_at, i.last_item)
FROM memory_users u
LEFT JOIN (SELECT user_id, count(*) AS items, max(born_at) AS last_item
           FROM items WHERE tenant_id = $1 GROUP BY user_id) i ON i.user_id = u.id
LEFT JOIN (SELECT user_id, count(*) AS convs
           FROM conversations WHERE tenant_id = $1 GROUP BY user_id) cv ON cv.user_id = u.id
WHERE u.tenant_id = $1 AND ($2::bigint = 0 OR u.id = $2)
ORDER BY u.name, u.id`

const listConversationsSQL = `
SELECT c.id, coalesce(nullif(c.title, ''), c.ext_key), c.created_at,
       count(i.id), max(i.born_at)
FROM conversations c
LEFT JOIN items i ON i.tenant_id = c.tenant_id AND i.conversation_id = c.id
WHERE c.tenant_id = $1 AND c.user_id = $2
GROUP BY c.tenant_id, c.id
ORDER BY max(i.born_at) DESC NULLS LAST, c.id DESC`

type userRow struct {
	ID         int64
	Name       string
	Display    string
	Clock      int64
	Items      int64
	Convs      int64
	LastActive *time.Time
}

type conversationRow struct {
	ID      int64
	Title   string
	Started time.Time
	Items   int64
	Last    *time.Time
}

func (c *Console) listUsers(ctx context.Context, tenantID, userID int64) ([]templates.UserRow, error) {
	var rows []userRow
	err := c.db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		r, err := tx.Query(ctx, listUsersSQL, tenantID, userID)
		if err != nil {
			return err
		}
		rows, err = pgx.CollectRows(r, pgx.RowToStructByPos[userRow])
		return err
	})
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := make([]templates.UserRow, len(rows))
	for i, u := range rows {
		out[i] = templates.UserRow{
			ID: u.ID, Name: u.Name, Display: u.Display, Clock: u.Clock, Items: u.Items,
			Conversations: u.Convs, LastActive: agoPtr(u.LastActive, now),
		}
	}
	return out, nil
}

func (c *Console) users(ec echo.Context, s *session) error {
	rows, err := c.listUsers(ec.Request().Context(), s.TenantID, 0)
	if err != nil {
		return c.internal(ec, err)
	}
	return c.render(ec, http.StatusOK, templates.UsersPage(c.page(ec, s, "Users", "users"), rows))
}

// user shows one memory user; an id from another tenant is not found.
func (c *Console) user(ec echo.Context, s *session) error {
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
	var convs []conversationRow
	err = c.db.InTenant(ctx, s.TenantID, func(tx pgx.Tx) error {
		r, err := tx.Query(ctx, listConversationsSQL, s.TenantID, id)
		if err != nil {
			return err
		}
		convs, err = pgx.CollectRows(r, pgx.RowToStructByPos[conversationRow])
		return err
	})
	if err != nil {
		return c.internal(ec, err)
	}
	keys, err := c.listKeys(ctx, s.TenantID, id, 0)
	if err != nil {
		return c.internal(ec, err)
	}
	now := time.Now()
	bindings, err := c.userBindings(ctx, s.TenantID, id)
	if err != nil {
		return c.internal(ec, err)
	}
	heat, err := c.userHeat(ctx, s.TenantID, id)
	if err != nil {
		return c.internal(ec, err)
	}
	// Conversation titles and the heat of the user's items are content.
	if err := c.auditView(ec, s, "user", []viewed{{userID: id, user: us[0].Name}}, map[string]any{"conversations": len(convs)}); err != nil {
		return c.internal(ec, err)
	}
	d := templates.UserDetail{User: us[0], Keys: keys, Bindings: bindings, Heat: heat}
	for _, cv := range convs {
		d.Conversations = append(d.Conversations, templates.ConversationRow{
			ID: cv.ID, Title: cv.Title, Items: cv.Items, Started: exact(cv.Started), Last: agoPtr(cv.Last, now),
		})
	}
	return c.render(ec, http.StatusOK, templates.UserPage(c.page(ec, s, us[0].Name, "users"), d))
}

// userHeat counts the user's items by heat now, by the engine's law.
func (c *Console) userHeat(ctx context.Context, tenantID, userID int64) (templates.HeatOverview, error) {
	sc := heatScale()
	o := templates.HeatOverview{Scale: sc, Bins: templates.NewHeatBins(sc)}
	err := c.db.UserHeat(ctx, tenantID, userID, func(clock int64, r store.HeatRow) {
		h := 0.0 // never activated: cold
		if r.TLast != nil && r.Peak != nil {
			h = memory.Heat(memory.Activation{TLast: *r.TLast, Peak: *r.Peak}, clock, r.Tau)
		}
		o.Add(h)
	})
	return o, err
}

const conversationMetaSQL = `
SELECT c.id, coalesce(nullif(c.title, ''), c.ext_key), c.user_id, u.name
FROM conversations c JOIN memory_users u ON u.tenant_id = c.tenant_id AND u.id = c.user_id
WHERE c.tenant_id = $1 AND c.id = $2`

type conversationMeta struct {
	ID     int64
	Title  string
	UserID int64
	User   string
}

func (c *Console) conversationMeta(ctx context.Context, tenantID, convID int64) (conversationMeta, error) {
	var m conversationMeta
	err := c.db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, conversationMetaSQL, tenantID, convID).Scan(&m.ID, &m.Title, &m.UserID, &m.User)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return m, store.ErrNotFound
	}
	return m, err
}
