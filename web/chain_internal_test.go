package web

import (
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

func TestSnippet(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"  two\n\tlines  ", 10, "two lines"},
		{"exactly ten", 11, "exactly ten"},
		{"one two three four", 9, "one two…"},
		{"ééééé", 3, "éé…"},
	}
	for _, c := range cases {
		if got := snippet(c.in, c.n); got != c.want {
			t.Errorf("snippet(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func TestShortDate(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	if got := shortDate(time.Date(2025, 5, 3, 23, 0, 0, 0, time.UTC), now); got != "3 May" {
		t.Errorf("this year: %q", got)
	}
	if got := shortDate(time.Date(2024, 12, 31, 0, 0, 0, 0, time.UTC), now); got != "31 Dec 2024" {
		t.Errorf("last year: %q", got)
	}
}

func TestChainGroups(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 5, 3, 10, 0, 0, 0, time.UTC)
	nb := func(of, id int64, rel string, later bool, total int, conv int64) store.ChainNeighbour {
		return store.ChainNeighbour{Of: of, ChainLink: store.ChainLink{ItemID: id, Relation: rel, Later: later, Weight: 1},
			Total: total, ConversationID: conv, Conversation: "c", Role: "user", BornAt: at, Snippet: strings.Repeat("x", 200)}
	}
	ns := []store.ChainNeighbour{
		nb(1, 9, "evidence", true, 1, 5),
		nb(1, 7, "thread", true, 4, 5),
		nb(1, 8, "thread", true, 4, 6),
		nb(1, 3, "thread", false, 1, 6),
		nb(1, 2, "someday", false, 1, 5),
		nb(2, 1, "thread", false, 1, 5),
	}
	got := chainGroups(ns, map[int64]int64{1: 5, 2: 6, 3: 6}, at)
	g := got[1]
	if len(g) != 3 || g[0].Kind != "continues" || g[1].Kind != "continued-by" || g[2].Kind != "answered-from" {
		t.Fatalf("groups of 1: %+v", g)
	}
	if g[1].More != 2 || len(g[1].Neighbours) != 2 {
		t.Errorf("continued-by lists %d with %d more, want 2 and 2", len(g[1].Neighbours), g[1].More)
	}
	if g[1].Neighbours[0].Elsewhere || !g[1].Neighbours[1].Elsewhere {
		t.Error("elsewhere marks the wrong neighbour")
	}
	if n := len([]rune(g[0].Neighbours[0].Snippet)); n != chainSnippet {
		t.Errorf("snippet of %d characters, want %d", n, chainSnippet)
	}
	if len(got[2]) != 1 || !got[2][0].Neighbours[0].Elsewhere {
		t.Errorf("groups of 2: %+v", got[2])
	}
	if _, ok := got[3]; ok {
		t.Error("an item without links has groups")
	}
}
