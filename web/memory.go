package web

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/templates"
)

// Memory is what the memory browser needs from the memory engine. The
// console ships NewSQLMemory; the engine can take its place with retrieval
// exactly as serving sees it. Both calls are tenant-scoped and return
// store.ErrNotFound for anything outside tenantID.
type Memory interface {
	// Search returns userID's items that best answer query, best first,
	// with heat as userID sees it; an empty query gives the latest items.
	// userID 0 searches every memory user of the tenant (each item's heat
	// as its owner sees it): only an admin's search asks that.
	Search(ctx context.Context, tenantID, userID int64, query string, limit int) ([]Item, error)
	// Conversation returns every item of one conversation in order, with
	// heat as the conversation's owner sees it.
	Conversation(ctx context.Context, tenantID, conversationID int64) ([]Item, error)
	// Item returns one item with heat as its owner sees it.
	Item(ctx context.Context, tenantID, itemID int64) (Item, error)
}

// Item is one stored item with what the browser shows about it.
type Item struct {
	ID             int64
	UserID         int64
	User           string // the owner's name
	ConversationID int64
	Conversation   string // title, or the conversation key
	Role           string // user or assistant
	Speaker        string
	Part           int // chunk index within its message
	Text           string
	BornAt         time.Time
	Terms          []string          // stored words, as the active dictionary sees them; never shown raw
	Heat           memory.Trajectory // born hot, reheats, decay, now
}

// ranker says in words how a Memory ranks what it finds.
type ranker interface{ Ranking() string }

// Ranking implements ranker.
func (m *SQLMemory) Ranking() string {
	return "Found by a text search of the stored words; the model's own retrieval may rank differently."
}

// Ranking implements ranker.
func (m *EngineMemory) Ranking() string {
	return "Ranked by retrieval itself: the same scoring, over words and their meaning, that picks what the model sees."
}

// allUsers is the user parameter that searches every user of the tenant.
const allUsers = "all"

const (
	searchLimit    = 50
	maxQueryLength = 500
)

func toView(items []Item, now time.Time) []templates.Item {
	out := make([]templates.Item, len(items))
	for i, it := range items {
		out[i] = templates.Item{
			ID: it.ID, UserID: it.UserID, User: it.User, ConversationID: it.ConversationID, Conversation: it.Conversation,
			Role: it.Role, Speaker: it.Speaker, Part: it.Part, Text: it.Text,
			When: ago(it.BornAt, now), WhenExact: exact(it.BornAt), Heat: heatHistory(it.Heat),
		}
	}
	return out
}

// viewed is one memory user's content a page shows: whose, and which
// items (chain neighbours apart, as the compact lines show their text).
type viewed struct {
	userID int64
	user   string // the name, written into the entry so it names the user even once renamed or purged
	items  []int64
	chain  []int64
	// requests are the inspector's requests of this user the page shows.
	requests []int64
}

// auditView records, before the page is sent, that the session's account
// is shown memory content: whose (the target, and the user's name), which
// view, which items, and in what role; one entry per memory user shown,
// all in one transaction. Content is never written to the log. A view
// that cannot be recorded is not shown.
func (c *Console) auditView(ec echo.Context, s *session, view string, shown []viewed, detail map[string]any) error {
	ctx := ec.Request().Context()
	return c.db.InTenant(ctx, s.TenantID, func(tx pgx.Tx) error {
		for _, v := range shown {
			d := map[string]any{"view": view, "user": v.user, "items": nonNil(v.items), "as": s.Role}
			if len(v.chain) > 0 {
				d["chain_items"] = v.chain
			}
			if len(v.requests) > 0 {
				d["requests"] = v.requests
			}
			for k, x := range detail {
				d[k] = x
			}
			if err := writeAudit(ctx, tx, actor(ec, s, "memory.view", memoryUserTarget(v.userID), d)); err != nil {
				return err
			}
		}
		return nil
	})
}

func nonNil(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}

// shownByOwner groups a page's items (and the chain neighbours their
// lines show) by owner, in the order owners first appear. With no items,
// the page still names whose memory was asked for (none, for an
// all-users search that found nothing).
func shownByOwner(items []templates.Item, userID int64, user string) []viewed {
	var out []viewed
	at := map[int64]int{}
	for _, it := range items {
		i, ok := at[it.UserID]
		if !ok {
			i = len(out)
			at[it.UserID] = i
			out = append(out, viewed{userID: it.UserID, user: it.User})
		}
		out[i].items = append(out[i].items, it.ID)
		for _, g := range it.Chain {
			for _, n := range g.Neighbours {
				out[i].chain = append(out[i].chain, n.ID)
			}
		}
	}
	if len(out) == 0 {
		out = append(out, viewed{userID: userID, user: user})
	}
	return out
}

// memoryUserTarget is how audit entries name a memory user; the audit
// page shows its current name.
func memoryUserTarget(userID int64) string { return "memory_user:" + strconv.FormatInt(userID, 10) }

// memory is the memory browser. The user comes from ?user= (checked to be
// the tenant's; "all" for every user, admins only) or is the first user;
// htmx searches get only the results.
func (c *Console) memory(ec echo.Context, s *session) error {
	ctx := ec.Request().Context()
	admin := s.admin()
	var userID int64
	all := false
	switch u := ec.QueryParam("user"); {
	case u == allUsers && admin:
		all = true
	case u == allUsers:
		return c.fail(ec, http.StatusForbidden, "Only the team's admins search every user's memory.")
	case u != "":
		id, err := strconv.ParseInt(u, 10, 64)
		if err != nil || id <= 0 {
			return c.notFound(ec)
		}
		if _, err := c.memoryUserName(ctx, s.TenantID, id); err != nil {
			return c.internal(ec, err)
		}
		userID = id
	}
	users, err := c.userOptions(ctx, s.TenantID, userID)
	if err != nil {
		return c.internal(ec, err)
	}
	if userID == 0 && !all && len(users) > 0 {
		userID, _ = strconv.ParseInt(users[0].Value, 10, 64)
		users[0].Selected = true
	}
	if admin && len(users) > 0 {
		users = append([]templates.Option{{Value: allUsers, Label: "All users", Selected: all}}, users...)
	}
	q := strings.TrimSpace(ec.QueryParam("q"))
	v := templates.Memory{Users: users, UserID: userID, AllUsers: all, Query: q, Scale: heatScale()}
	switch {
	case utf8.RuneCountInString(q) > maxQueryLength || !utf8.ValidString(q):
		v.Error = "Use a shorter search."
	case userID != 0 || all:
		items, err := c.mem.Search(ctx, s.TenantID, userID, q, searchLimit)
		if err != nil {
			return c.internal(ec, err)
		}
		view := "latest"
		if q != "" {
			view = "search"
		}
		v.Items = toView(items, time.Now())
		if q != "" {
			c.explain(items, v.Items, q)
		}
		if err := c.withChain(ctx, s.TenantID, v.Items); err != nil {
			return c.internal(ec, err)
		}
		asked := "all users"
		if !all {
			if asked, err = c.memoryUserName(ctx, s.TenantID, userID); err != nil {
				return c.internal(ec, err)
			}
		}
		if err := c.auditView(ec, s, view, shownByOwner(v.Items, userID, asked), nil); err != nil {
			return c.internal(ec, err)
		}
	}
	if isHTMX(ec) {
		return c.render(ec, http.StatusOK, templates.MemoryResults(v))
	}
	return c.render(ec, http.StatusOK, templates.MemoryPage(c.page(ec, s, "Memory", "memory"), v))
}

// explain marks the searched words in each found item and says why it
// matched.
func (c *Console) explain(items []Item, views []templates.Item, q string) {
	words := queryWords(q)
	re := wordsPattern(words)
	ranking := ""
	if r, ok := c.mem.(ranker); ok {
		ranking = r.Ranking()
	}
	for i := range views {
		if re != nil {
			views[i].Parts = highlight(views[i].Text, re)
		}
		views[i].Match = matchOf(items[i], words, ranking)
	}
}

// conversation shows every turn of one conversation with its heat.
func (c *Console) conversation(ec echo.Context, s *session) error {
	ctx := ec.Request().Context()
	id, err := strconv.ParseInt(ec.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return c.notFound(ec)
	}
	meta, err := c.conversationMeta(ctx, s.TenantID, id)
	if err != nil {
		return c.internal(ec, err)
	}
	items, err := c.mem.Conversation(ctx, s.TenantID, id)
	if err != nil {
		return c.internal(ec, err)
	}
	bindings, err := c.conversationBindings(ctx, s.TenantID, id)
	if err != nil {
		return c.internal(ec, err)
	}
	v := templates.Conversation{ID: meta.ID, Title: meta.Title, User: meta.User, UserID: meta.UserID, Items: toView(items, time.Now()),
		Scale: heatScale(), Bindings: bindings}
	if err := c.withChain(ctx, s.TenantID, v.Items); err != nil {
		return c.internal(ec, err)
	}
	// The conversation is its owner's; the title alone is content too.
	shown := shownByOwner(v.Items, meta.UserID, meta.User)
	if err := c.auditView(ec, s, "conversation", shown, map[string]any{"conversation_id": id}); err != nil {
		return c.internal(ec, err)
	}
	return c.render(ec, http.StatusOK, templates.ConversationPage(c.page(ec, s, meta.Title, "memory"), v))
}

// withChain adds each item's compact chain line, every owner's items'
// links read in one round trip.
func (c *Console) withChain(ctx context.Context, tenantID int64, items []templates.Item) error {
	conv := make(map[int64]owned, len(items))
	for _, it := range items {
		conv[it.ID] = owned{it.UserID, it.ConversationID}
	}
	groups, err := c.chainLinks(ctx, tenantID, conv, chainPerLine)
	if err != nil {
		return err
	}
	for i := range items {
		items[i].Chain = groups[items[i].ID]
	}
	return nil
}

// item shows one item in detail with its chain neighbours, grouped by
// relation.
func (c *Console) item(ec echo.Context, s *session) error {
	ctx := ec.Request().Context()
	id, err := strconv.ParseInt(ec.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return c.notFound(ec)
	}
	it, err := c.mem.Item(ctx, s.TenantID, id)
	if err != nil {
		return c.internal(ec, err)
	}
	user, err := c.memoryUserName(ctx, s.TenantID, it.UserID)
	if err != nil {
		return c.internal(ec, err)
	}
	groups, err := c.chainLinks(ctx, s.TenantID, map[int64]owned{it.ID: {it.UserID, it.ConversationID}}, chainPerPage)
	if err != nil {
		return c.internal(ec, err)
	}
	var chain []int64
	for _, g := range groups[it.ID] {
		for _, n := range g.Neighbours {
			chain = append(chain, n.ID)
		}
	}
	shown := []viewed{{userID: it.UserID, user: user, items: []int64{it.ID}, chain: chain}}
	if err := c.auditView(ec, s, "item", shown, map[string]any{"conversation_id": it.ConversationID}); err != nil {
		return c.internal(ec, err)
	}
	frames, err := c.itemFrames(ctx, s.TenantID, it.ID)
	if err != nil {
		return c.internal(ec, err)
	}
	v := templates.ItemDetail{Item: toView([]Item{it}, time.Now())[0], UserID: it.UserID, User: user, Chain: groups[it.ID], Frames: frames}
	return c.render(ec, http.StatusOK, templates.ItemPage(c.page(ec, s, "Item #"+strconv.FormatInt(it.ID, 10), "memory"), v))
}
