package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/templates"
)

// The request inspector: for each proxied request the proxy kept a record
// of (proxy/inspect.go), what the provider received from memory and what
// came back. It shows memory content, so it has the memory browser's role
// and every view is audited first.

const (
	requestsLimit   = 100
	itemFramesLimit = 20
)

// reasonWords are the frame's reasons (memory.Reason codes) as the page
// says them, in the order a person reads why.
var reasonWords = map[string]string{
	"match":     "matched the question",
	"neighbour": "next to a match in its conversation",
	"chain":     "linked to a match (chain)",
	"date":      "of a date the question names",
	"mandatory": "a best match, never trimmed",
	"recent":    "recent in this conversation, always in",
	"live":      "the question itself",
	"warm":      "still warm from earlier turns",
}

func reasonsOf(codes []string) []string {
	out := make([]string, 0, len(codes))
	for _, c := range codes {
		if w, ok := reasonWords[c]; ok {
			out = append(out, w)
		} else {
			out = append(out, c)
		}
	}
	return out
}

// millis formats a duration in milliseconds: tenths below ten, whole
// thousands-separated above.
func millis(ms float64) string {
	if ms < 10 {
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	}
	return templates.Count(int64(ms+0.5)) + " ms"
}

func tokens(n int) string { return templates.Count(int64(n)) }

// retentionWords says how long records are kept, in days or hours.
func retentionWords(d time.Duration) string {
	switch {
	case d <= 0:
		return "no time at all (the inspector is off: PERPETUITY_INSPECT_RETENTION is 0)"
	case d%(24*time.Hour) == 0:
		return plural(int(d/(24*time.Hour)), "day")
	case d%time.Hour == 0:
		return plural(int(d/time.Hour), "hour")
	}
	return d.String()
}

func requestRowView(r store.RequestRow, now time.Time) templates.RequestRow {
	return templates.RequestRow{ID: r.ID, When: ago(r.At, now), WhenExact: exact(r.At), UserID: r.UserID, User: r.User,
		Model: r.Model, Provider: r.Provider, Status: r.Status, Latency: millis(r.DurationMS),
		FrameItems: tokens(r.FrameItems), FrameTokens: tokens(r.FrameTokens), Inspected: r.Inspected, Question: oneLine(r.Question, 140)}
}

// oneLine shortens text to n runes on one line, for lists.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// requests lists recent requests, every user's or ?user='s.
func (c *Console) requests(ec echo.Context, s *session) error {
	ctx := ec.Request().Context()
	var userID int64
	u := ec.QueryParam("user")
	switch {
	case (u == "" || u == allUsers) && s.admin():
	case u == allUsers:
		// As in the memory browser: every user's questions at once are an
		// admin's view; a reader looks one user at a time.
		return c.fail(ec, http.StatusForbidden, "Only the team's admins list every user's requests.")
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
	if userID == 0 && !s.admin() {
		if len(users) == 0 {
			return c.notFound(ec)
		}
		if userID, err = strconv.ParseInt(users[0].Value, 10, 64); err != nil {
			return c.internal(ec, err)
		}
		users[0].Selected = true
	}
	if s.admin() {
		users = append([]templates.Option{{Value: allUsers, Label: "All users", Selected: userID == 0}}, users...)
	}
	rows, err := c.db.Requests(ctx, s.TenantID, userID, requestsLimit)
	if err != nil {
		return c.internal(ec, err)
	}
	// The list shows each inspected request's question: memory content.
	if err := c.auditView(ec, s, "requests", requestOwners(rows), nil); err != nil {
		return c.internal(ec, err)
	}
	now := time.Now()
	v := templates.RequestList{Users: users, UserID: userID, Retention: retentionWords(c.cfg.InspectRetention)}
	for _, r := range rows {
		v.Rows = append(v.Rows, requestRowView(r, now))
	}
	return c.render(ec, http.StatusOK, templates.RequestsPage(c.page(ec, s, "Requests", "users"), v))
}

// request shows one request's record.
func (c *Console) request(ec echo.Context, s *session) error {
	ctx := ec.Request().Context()
	id, err := strconv.ParseInt(ec.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return c.notFound(ec)
	}
	r, err := c.db.Request(ctx, s.TenantID, id)
	if err != nil {
		return c.internal(ec, err)
	}
	d := templates.RequestDetail{Row: requestRowView(r.RequestRow, time.Now()), Retention: retentionWords(c.cfg.InspectRetention)}
	var items []int64
	if rec := r.Record; rec != nil {
		for _, it := range rec.Items {
			items = append(items, it.ID)
		}
		names, err := c.conversationNames(ctx, s.TenantID, rec.Items)
		if err != nil {
			return c.internal(ec, err)
		}
		d = inspectionView(d, r, names)
	}
	if err := c.auditView(ec, s, "request", []viewed{{userID: r.UserID, user: r.User, items: items}}, map[string]any{"request": id}); err != nil {
		return c.internal(ec, err)
	}
	return c.render(ec, http.StatusOK, templates.RequestPage(c.page(ec, s, "Request #"+strconv.FormatInt(id, 10), "users"), d))
}

// recordNames are what a record's items are called now: conversation
// titles and their owners.
type recordNames struct {
	conv, user map[int64]string
}

// conversationNames reads the current names of the conversations and
// owners a record's items name (they may have been renamed since).
func (c *Console) conversationNames(ctx context.Context, tenantID int64, items []store.InspectItem) (recordNames, error) {
	n := recordNames{conv: map[int64]string{}, user: map[int64]string{}}
	for _, it := range items {
		if it.ConvID != 0 && n.conv[it.ConvID] == "" {
			m, err := c.conversationMeta(ctx, tenantID, it.ConvID)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return n, err
			}
			n.conv[it.ConvID] = m.Title
			if m.UserID != 0 {
				n.user[m.UserID] = m.User
			}
		}
	}
	return n, nil
}

// inspectionView formats a record: numbers with separators, reasons in
// words, the question's words marked wherever memory text is shown.
func inspectionView(d templates.RequestDetail, r store.InspectedRequest, names recordNames) templates.RequestDetail {
	rec := r.Record
	words := queryWords(rec.Question)
	re := wordsPattern(words)
	mark := func(s string) []templates.TextPart {
		if re == nil {
			return []templates.TextPart{{Text: s}}
		}
		return highlight(s, re)
	}
	d.Inspected, d.Words = true, words
	d.Question = []templates.TextPart{{Text: rec.Question, Mark: true}}
	d.FrameTokens, d.FrameItems = tokens(rec.FrameTokens), tokens(rec.FrameItems)
	if r.TokensIn > 0 {
		d.HarnessTokens = tokens(rec.HarnessTokens)
	}
	d.ProviderIn, d.ProviderOut = tokens(r.TokensIn), tokens(r.TokensOut)
	d.Trimmed, d.LeftOut = rec.Trimmed, tokens(rec.LeftOut)
	d.Status = strconv.Itoa(rec.ProviderStatus) + " " + http.StatusText(rec.ProviderStatus)
	if rec.ProviderStatus == 0 {
		d.Status = "not reached"
	}
	d.ProviderMS, d.Rounds = millis(rec.ProviderMS), strconv.Itoa(rec.Rounds)
	for _, t := range rec.Turns {
		d.Turns = append(d.Turns, templates.FrameTurn{Role: t.Role, Parts: mark(t.Text)})
	}
	listed := 0
	for i, it := range rec.Items {
		v := templates.FrameItem{ID: it.ID, Position: strconv.Itoa(i + 1), ConvID: it.ConvID, UserID: it.UserID,
			Conversation: names.conv[it.ConvID], Owner: names.user[it.UserID], Speaker: it.Speaker, Role: it.Role,
			Score: "—", Rank: "—", Heat: strconv.FormatFloat(it.Heat, 'f', 2, 64), Tokens: tokens(it.Tokens),
			Reasons: reasonsOf(it.Reasons), Codes: strings.Join(it.Reasons, " "), Excerpt: mark(it.Excerpt)}
		if it.Score > 0 {
			v.Score = strconv.FormatFloat(it.Score, 'f', 2, 64)
		}
		if it.Rank >= 0 {
			v.Rank = strconv.Itoa(it.Rank + 1)
		}
		if it.Shown {
			d.Shown = append(d.Shown, v)
		} else {
			listed++
			d.Left = append(d.Left, v)
		}
	}
	if hidden := rec.LeftOut - listed; hidden > 0 {
		d.LeftOutHidden = tokens(hidden)
	}
	for _, t := range rec.Tools {
		d.Tools = append(d.Tools, templates.ToolRun{Round: strconv.Itoa(t.Round), Name: t.Name, Args: t.Args, Result: t.Result,
			MS: millis(t.MS), Failed: t.Failed})
	}
	d.Reply, d.Interrupted = mark(rec.Reply), rec.Interrupted
	return d
}

// itemFrames are the kept requests an item was a candidate in.
func (c *Console) itemFrames(ctx context.Context, tenantID, itemID int64) ([]templates.ItemFrame, error) {
	fs, err := c.db.FramesOfItem(ctx, tenantID, itemID, itemFramesLimit)
	if err != nil {
		return nil, fmt.Errorf("item frames: %w", err)
	}
	now := time.Now()
	out := make([]templates.ItemFrame, len(fs))
	for i, f := range fs {
		out[i] = templates.ItemFrame{RequestID: f.RequestID, When: ago(f.At, now), WhenExact: exact(f.At), Shown: f.Shown,
			Question: oneLine(f.Question, 140)}
	}
	return out, nil
}

// requestOwners are the memory users whose questions a request list shows
// (the requests with a record), in the order they first appear, each with
// its own requests.
func requestOwners(rows []store.RequestRow) []viewed {
	var out []viewed
	at := map[int64]int{}
	for _, r := range rows {
		if !r.Inspected || r.UserID == 0 {
			continue
		}
		i, ok := at[r.UserID]
		if !ok {
			i = len(out)
			at[r.UserID] = i
			out = append(out, viewed{userID: r.UserID, user: r.User})
		}
		out[i].requests = append(out[i].requests, r.ID)
	}
	return out
}
