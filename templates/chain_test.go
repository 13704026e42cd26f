package templates

import (
	"strings"
	"testing"
)

func sampleChain() []ChainGroup {
	return []ChainGroup{
		{Kind: "continues", Label: "continues", Heading: "Continues", Neighbours: []ChainNeighbour{
			{ID: 123, ConversationID: 4, Conversation: "<i>trip</i>", Elsewhere: true, Role: "user", Snippet: "<script>x</script> plans", Date: "3 May", DateExact: "2025-05-03 10:00 UTC"},
			{ID: 124, ConversationID: 9, Conversation: "here", Role: "assistant", Snippet: "noted", Date: "4 May"},
		}},
		{Kind: "continued-by", Label: "continued by", Heading: "Continued by", More: 2, Neighbours: []ChainNeighbour{
			{ID: 456, ConversationID: 9, Conversation: "here", Role: "user", Snippet: "again", Date: "5 May"},
		}},
		{Kind: "answered-from", Label: "answered from by", Heading: "Answered from by", Neighbours: []ChainNeighbour{
			{ID: 789, ConversationID: 9, Conversation: "here", Role: "assistant", Snippet: "reply", Date: "5 May"},
		}},
	}
}

func TestChainLineOnTheCard(t *testing.T) {
	t.Parallel()
	it := Item{ID: 77, ConversationID: 9, Conversation: "here", Role: "user", Text: "t", Chain: sampleChain()}
	_, doc := render(t, MemoryResults(Memory{Items: []Item{it, {ID: 78, Role: "user", Text: "alone"}}}))
	lines := byID(doc, "chain-line")
	if lines.Length() != 1 {
		t.Fatalf("%d chain lines, want one for the linked item only", lines.Length())
	}
	got := strings.Join(strings.Fields(lines.Text()), " ")
	want := "continues #123 (<i>trip</i>, 3 May), #124 (4 May) · continued by #456 (5 May) +2 more · answered from by #789 (5 May)"
	if got != want {
		t.Fatalf("chain line\n got %q\nwant %q", got, want)
	}
	if doc.Find("i, script").Length() != 0 {
		t.Fatal("a conversation title or snippet rendered as markup")
	}
	first := byID(doc, "chain-link").First()
	if first.AttrOr("href", "") != "/console/items/123" || first.AttrOr("title", "") != "<script>x</script> plans" {
		t.Fatalf("neighbour link %q titled %q", first.AttrOr("href", ""), first.AttrOr("title", ""))
	}
	if href := byID(doc, "chain-more").AttrOr("href", ""); href != "/console/items/77#chain" {
		t.Fatalf("more link %q", href)
	}
	if href := byID(doc, "item-link").First().AttrOr("href", ""); href != "/console/items/77" {
		t.Fatalf("item permalink %q", href)
	}
}

func TestItemPageGroupsTheChain(t *testing.T) {
	t.Parallel()
	p := Page{Title: "Item #77", Nav: "memory", CSRF: "tok", Email: "ada@example.com", Role: RoleTenantMember, TenantName: "Acme"}
	d := ItemDetail{Item: Item{ID: 77, ConversationID: 9, Conversation: "here", Role: "user", Text: "t"}, UserID: 5, User: "ada", Chain: sampleChain()}
	_, doc := render(t, ItemPage(p, d))
	groups := byID(doc, "chain-group")
	if groups.Length() != 3 {
		t.Fatalf("%d groups", groups.Length())
	}
	var kinds []string
	for i := range groups.Length() {
		kinds = append(kinds, groups.Eq(i).AttrOr("data-kind", ""))
	}
	if strings.Join(kinds, ",") != "continues,continued-by,answered-from" {
		t.Fatalf("groups in order %v", kinds)
	}
	n := groups.Eq(0).Find(`[data-testid="chain-neighbour"]`).First()
	if n.Find(`[data-testid="chain-snippet"]`).Text() != "<script>x</script> plans" || doc.Find("script:not([src])").Length() != 0 {
		t.Fatal("snippet not shown verbatim")
	}
	if c := n.Find(`[data-testid="chain-conversation"]`); c.AttrOr("href", "") != "/console/conversations/4#item-123" || c.Text() != "<i>trip</i>" {
		t.Fatalf("neighbour conversation %q -> %q", c.Text(), c.AttrOr("href", ""))
	}
	if got := n.Find(`[data-testid="chain-date"]`).AttrOr("title", ""); got != "2025-05-03 10:00 UTC" {
		t.Fatalf("date title %q", got)
	}
	if got := groups.Eq(1).Find(`[data-testid="chain-more"]`).Text(); !strings.Contains(got, "2 more") {
		t.Fatalf("more note %q", got)
	}
	if byID(doc, "chain-line").Length() != 0 || byID(doc, "chain-empty").Length() != 0 {
		t.Fatal("item page repeats the chain as a line, or calls it empty")
	}
	_, empty := render(t, ItemPage(p, ItemDetail{Item: d.Item, UserID: 5, User: "ada"}))
	if byID(empty, "chain-empty").Length() != 1 || byID(empty, "chain-section").Length() != 1 {
		t.Fatal("an unlinked item has no empty chain section")
	}
}
