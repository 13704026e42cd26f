package web

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/perpetuity/perpetuity/memory/chain"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/templates"
)

const (
	// chainPerLine is how many neighbours of each relation a card's compact
	// line names; the item page lists up to chainPerPage.
	chainPerLine = 3
	chainPerPage = 25
	// chainSnippet is how much of a neighbour's text is shown, in characters.
	chainSnippet = 140
)

// chainKind is one relation seen from one end.
type chainKind struct {
	relation    string
	later       bool
	kind, label string
	heading     string
}

// chainKinds are the four, in the order a page lists them.
func chainKinds() [4]chainKind {
	return [...]chainKind{
		{relation: chain.Thread, later: false, kind: "continues", label: "continues", heading: "Continues: earlier items this one picks up"},
		{relation: chain.Thread, later: true, kind: "continued-by", label: "continued by", heading: "Continued by: later items that pick this one up"},
		{relation: chain.Evidence, later: false, kind: "drew-on", label: "drew on", heading: "Drew on: what this reply's request showed the model and it used"},
		{relation: chain.Evidence, later: true, kind: "answered-from", label: "answered from by", heading: "Answered from by: replies that drew on this item"},
	}
}

// chainLinks reads the chain neighbours of items of any owners in one
// round trip and groups them per item. conv maps each item to its owner
// and conversation, so a neighbour elsewhere is named as such.
func (c *Console) chainLinks(ctx context.Context, tenantID int64, conv map[int64]owned, per int) (map[int64][]templates.ChainGroup, error) {
	owners := map[int64][]int64{}
	convs := make(map[int64]int64, len(conv))
	for id, o := range conv {
		owners[o.user] = append(owners[o.user], id)
		convs[id] = o.conv
	}
	ns, err := c.db.ChainNeighboursOf(ctx, tenantID, owners, per, chainSnippet+1)
	if err != nil {
		return nil, err
	}
	return chainGroups(ns, convs, time.Now()), nil
}

// owned is an item's owner and conversation.
type owned struct{ user, conv int64 }

// chainGroups turns neighbours (ordered by item) into each item's groups,
// in chainKinds order.
func chainGroups(ns []store.ChainNeighbour, conv map[int64]int64, now time.Time) map[int64][]templates.ChainGroup {
	type key struct {
		of int64
		k  int
	}
	kinds := chainKinds()
	groups := map[key]*templates.ChainGroup{}
	for _, n := range ns {
		k := -1
		for i, ck := range kinds {
			if ck.relation == n.Relation && ck.later == n.Later {
				k = i
			}
		}
		if k < 0 {
			continue // a relation this console does not know yet
		}
		g := groups[key{n.Of, k}]
		if g == nil {
			ck := kinds[k]
			g = &templates.ChainGroup{Kind: ck.kind, Label: ck.label, Heading: ck.heading, More: n.Total}
			groups[key{n.Of, k}] = g
		}
		g.More--
		g.Neighbours = append(g.Neighbours, templates.ChainNeighbour{
			ID: n.ItemID, ConversationID: n.ConversationID, Conversation: n.Conversation,
			Elsewhere: n.ConversationID != conv[n.Of], Role: n.Role, Snippet: snippet(n.Snippet, chainSnippet),
			Date: shortDate(n.BornAt, now), DateExact: exact(n.BornAt),
		})
	}
	out := map[int64][]templates.ChainGroup{}
	for of := range conv {
		for k := range kinds {
			if g := groups[key{of, k}]; g != nil {
				out[of] = append(out[of], *g)
			}
		}
	}
	return out
}

// snippet is text on one line, cut to at most n characters.
func snippet(text string, n int) string {
	s := strings.Join(strings.Fields(text), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

// shortDate is a day as people say it: "3 May", with the year when it is
// not this one.
func shortDate(t, now time.Time) string {
	t = t.UTC()
	if t.Year() == now.UTC().Year() {
		return t.Format("2 Jan")
	}
	return t.Format("2 Jan 2006")
}
