package templates

// ChainNeighbour is one neighbour of an item in the chain graph.
type ChainNeighbour struct {
	ID             int64
	ConversationID int64
	Conversation   string
	// Elsewhere: the neighbour is in another conversation than the item,
	// which the compact line then names.
	Elsewhere bool
	Role      string
	Snippet   string
	Date      string // short, e.g. "3 May"
	DateExact string
}

// ChainGroup is an item's neighbours of one relation and direction.
type ChainGroup struct {
	Kind       string // continues, continued-by, drew-on, answered-from
	Label      string // as the compact line says it: "continued by #456"
	Heading    string // as the item page titles the group
	Neighbours []ChainNeighbour
	More       int // neighbours not listed
}

// ItemDetail is one item's page: the item and its chain.
type ItemDetail struct {
	Item   Item
	UserID int64
	User   string
	Chain  []ChainGroup
	Frames []ItemFrame // kept requests it was in (inspector.templ)
}

// Where is when the neighbour was said, and in which conversation when it
// is another one: "(trip, 3 May)".
func (n ChainNeighbour) Where() string {
	if n.Elsewhere {
		return "(" + n.Conversation + ", " + n.Date + ")"
	}
	return "(" + n.Date + ")"
}

// listSep separates the j-th of n names in a list.
func listSep(j, n int) string {
	if j < n-1 {
		return ", "
	}
	return ""
}
