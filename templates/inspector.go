package templates

// Views of the request inspector (inspector.templ): plain values, every
// number already formatted, every reason already in words.

// RequestList is the recent requests, optionally of one memory user.
type RequestList struct {
	Users     []Option
	UserID    int64 // 0: every user
	Retention string
	Rows      []RequestRow
}

// RequestRow is one proxied request in the list.
type RequestRow struct {
	ID          int64
	When        string
	WhenExact   string
	UserID      int64
	User        string
	Model       string
	Provider    string
	Status      int
	Latency     string
	FrameItems  string
	FrameTokens string
	Inspected   bool
	Question    string
}

// RequestDetail is one request as the provider saw it.
type RequestDetail struct {
	Row           RequestRow
	Inspected     bool
	Retention     string
	Question      []TextPart
	Words         []string // the question's words, as marked below
	FrameTokens   string
	FrameItems    string
	HarnessTokens string // "" when the provider reported no count
	ProviderIn    string
	ProviderOut   string
	Trimmed       bool
	LeftOut       string
	LeftOutHidden string // left out, beyond those listed; "" for none
	Turns         []FrameTurn
	Shown         []FrameItem
	Left          []FrameItem
	Tools         []ToolRun
	Status        string
	ProviderMS    string
	Rounds        string
	Reply         []TextPart
	Interrupted   bool
}

// FrameTurn is one message of the frame as the provider received it.
type FrameTurn struct {
	Role  string
	Parts []TextPart
}

// FrameItem is one candidate of the frame and why it was there.
type FrameItem struct {
	ID           int64
	Position     string // "1", "2": its place in the frame's priority order
	Conversation string
	ConvID       int64
	UserID       int64
	Owner        string
	Speaker      string
	Role         string
	Score        string
	Rank         string
	Heat         string
	Tokens       string
	Reasons      []string
	Codes        string // the reason codes, space-separated, for tests and styling
	Excerpt      []TextPart
}

// ToolRun is one memory tool call the model made and what it got back.
type ToolRun struct {
	Round  string
	Name   string
	Args   string
	Result string
	MS     string
	Failed bool
}

// ItemFrame is one kept request whose frame an item was in, or left out of.
type ItemFrame struct {
	RequestID int64
	When      string
	WhenExact string
	Shown     bool
	Question  string
}
