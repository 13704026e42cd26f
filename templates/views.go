// Package templates renders the console's pages as templ components. It
// knows nothing of HTTP, sessions or SQL: handlers in web hand it plain view
// values (strings already formatted, numbers already computed) and it turns
// them into HTML and server-drawn SVG. Every element a test looks for carries
// a data-testid attribute. No inline script or style anywhere, so the
// console's CSP can forbid both.
package templates

// Roles, as stored on accounts and bound in Casbin.
const (
	RolePlatformAdmin = "platform_admin"
	RoleTenantAdmin   = "tenant_admin"
	RoleTenantMember  = "tenant_member" // keys and usage, no memory content
	RoleTenantReader  = "tenant_reader" // memory content, read-only, every view audited
)

// Page is what the layout of every signed-in page needs.
type Page struct {
	Title      string
	Nav        string // which navigation entry is current
	CSRF       string // token for forms and htmx requests
	Email      string // signed-in account
	Role       string
	TenantName string // empty for a platform admin who has not entered a tenant
	Notice     string // one-line confirmation after an action
}

// IsAdmin reports whether the page may offer changes.
func (p Page) IsAdmin() bool { return p.Role == RoleTenantAdmin || p.Role == RolePlatformAdmin }

// TenantRole is a role a team admin can give, with its rights in words.
type TenantRole struct {
	Role   string
	Rights string
}

// TenantRoles are the roles of a team's accounts, least first.
var TenantRoles = []TenantRole{
	{RoleTenantMember, "Creates and revokes API keys and sees usage (tokens and errors per user, key and day). Never sees memory content: no memory browser, conversations, items or user pages."},
	{RoleTenantReader, "Reads memory: the memory browser, conversations, items and user pages, read-only. Every view of memory content is written to the audit log with whose memory it was. Cannot create keys."},
	{RoleTenantAdmin, "Everything a member and a reader may, plus accounts, the audit log, exports, renames, purges, dictionaries and integrity checks."},
}

// ReadsContent reports whether the account may see memory content (and
// so whether pages may link to it): readers and admins.
func (p Page) ReadsContent() bool { return p.Role == RoleTenantReader || p.IsAdmin() }

// ManagesKeys reports whether the account may create and revoke keys and
// see usage: members and admins.
func (p Page) ManagesKeys() bool { return p.Role == RoleTenantMember || p.IsAdmin() }

// IsPlatform reports whether the account is a platform admin.
func (p Page) IsPlatform() bool { return p.Role == RolePlatformAdmin }

// AuthForm is the sign-up, sign-in and invitation forms' state.
type AuthForm struct {
	CSRF   string
	Error  string
	Team   string
	Email  string
	Token  string // invitation token (invitation form only)
	Tenant string // invitation form: the team joined
	Role   string // invitation form: the role offered
}

// Connect is what an agent needs to reach its proxy. Key is set only in the
// response that created it; otherwise the snippets show a placeholder.
type Connect struct {
	Key           string
	KeyName       string
	KeyPrefix     string
	UserName      string
	OpenAIBase    string
	AnthropicBase string
	// TenantWide: the key may name any memory user (X-Perpetuity-User);
	// otherwise it is pinned to UserName, as new keys are by default.
	TenantWide bool
	// Spent: the page that showed the key once is seen again; it says so
	// (KeyName, KeyPrefix) instead of showing the key.
	Spent bool
}

// Stat is one figure on the overview.
type Stat struct {
	ID    string
	Label string
	Value string
}

// Series is one line or set of bars in a chart.
type Series struct {
	Name   string
	Color  string
	Values []float64
}

// Chart is a small chart over days; a single series draws bars, several
// draw lines.
type Chart struct {
	ID     string
	Title  string
	Unit   string
	Labels []string
	Series []Series
}

// Overview is the tenant's front page.
type Overview struct {
	Days   int
	Stats  []Stat
	Charts []Chart
}

// Option is one choice in a select.
type Option struct {
	Value    string
	Label    string
	Selected bool
}

// KeyRow is one API key; the key itself is never shown again.
type KeyRow struct {
	ID       int64
	Name     string
	Prefix   string
	User     string
	UserID   int64
	Scope    string // "pinned" or "tenant-wide"
	Created  string
	LastUsed string
	Revoked  string // when, or empty while live
	// Expires is the key's end as the table words it: "never",
	// "expires in 3 days (…)", "rotated, old key valid until …",
	// "expired …". Expired: the end has come (the proxy refuses the key).
	Expires string
	Expired bool
	// Rotatable: live, not ended and not rotated already.
	Rotatable bool
	// Limits is the key's own limits, or "team's" where it has none.
	Limits string
}

// Keys is the API keys page.
type Keys struct {
	Rows   []KeyRow
	Users  []Option // none selected unless the admin chose one
	Scopes []Option // pinned (the default) or tenant-wide, for a new key
	New    *Connect // the key just created, shown once
	Error  string
	// What a refused form said, to fill it in again.
	Name          string
	NewUser       string
	NewUserChosen bool
	Expires       string // the expiry date asked for, YYYY-MM-DD; empty: never
	// Rotated says, on the page that shows a rotation's new key, until
	// when the old one keeps working.
	Rotated string
}

// KeyRotate is the page that asks before a rotation, saying its effect.
type KeyRotate struct {
	ID     int64
	Name   string
	Prefix string
	Graces []Option // the grace periods, none chosen
	Error  string
}

// KeyLimits is the form that edits one key's own limits. Empty fields
// take the team's limits.
type KeyLimits struct {
	ID               int64
	Name             string
	Prefix           string
	RPM, TPM, TPD    string
	TeamRPM, TeamTPM string // the team's, as the placeholders say
	TeamTPD          string
	Error            string
}

// UserRow is one memory user.
type UserRow struct {
	ID            int64
	Name          string
	Display       string
	Items         int64
	Conversations int64
	Clock         int64
	LastActive    string
}

// ConversationRow is one conversation of a memory user.
type ConversationRow struct {
	ID      int64
	Title   string
	Items   int64
	Last    string
	Started string
}

// UserDetail is one memory user's page.
type UserDetail struct {
	User          UserRow
	Conversations []ConversationRow
	Keys          []KeyRow
	Bindings      []BindingRow // the user's binding history, newest first
	Heat          HeatOverview // the user's items by heat now
}

// BindingRow is one row of the binding log.
type BindingRow struct {
	Kind, Subject, Value, Source string
	When, Ago                    string
}

// Item is one stored item as the memory browser shows it.
type Item struct {
	ID             int64
	UserID         int64
	User           string // the owner, shown when a list spans users
	ConversationID int64
	Conversation   string
	Role           string
	Speaker        string
	Part           int
	Text           string
	Parts          []TextPart // Text cut where a searched word matches; nil: no search
	Match          *Match     // why a search found it; nil: no search
	When           string     // relative, e.g. "3 days ago"
	WhenExact      string
	Heat           HeatHistory
	Chain          []ChainGroup // a few neighbours per group, for the compact line
}

// TextPart is a run of an item's text, marked when it is a searched word.
type TextPart struct {
	Text string
	Mark bool
}

// Match says in words why a search found an item.
type Match struct {
	Found   []string // searched words the item contains
	Missing []string // searched words it does not contain
	Ranking string   // what ranked it, in words
}

// HeatHistory is an item's heat over its owner's clock, computed by the
// console with the engine's law; the pictures only lay it out.
type HeatHistory struct {
	Scale      HeatScale
	Tau        float64
	Now        int64         // the owner's clock
	End        int64         // the last clock of the past: now, or a later reheat
	Current    float64       // heat now
	Segments   []HeatSegment // birth, then each adopted reheat, in clock order
	ColdAt     int64         // the clock from which it is cold unless reheated
	Projection []HeatSample  // the decay from now to ColdAt, if it is warm now
}

// HeatSegment is the curve from one activation to the next (or to End):
// it starts at Peak and decays through Samples, in clock order.
type HeatSegment struct {
	Clock   int64
	Peak    float64
	Samples []HeatSample
}

// HeatSample is the heat at one clock of a segment.
type HeatSample struct{ Clock, Heat float64 }

// Memory is the memory browser: one user's memory (or, for an admin,
// every user's), searched.
type Memory struct {
	Users    []Option // the first is "all users" when the viewer may search them
	UserID   int64    // 0 with AllUsers
	AllUsers bool
	Query    string
	Items    []Item
	Scale    HeatScale
	Error    string
}

// Conversation is every turn of one conversation with its heat.
type Conversation struct {
	ID       int64
	Title    string
	User     string
	UserID   int64
	Items    []Item
	Scale    HeatScale
	Bindings []BindingRow // the conversation's binding history, newest first
}

// AccountRow is one console account of the tenant.
type AccountRow struct {
	ID         int64
	Email      string
	Role       string
	Created    string
	LastSignIn string
	Disabled   bool
	Self       bool
	Throttled  int // failed sign-ins held against it in the last day
}

// ResetReveal is a password reset link just made, shown once; URL is
// empty when the page is seen again.
type ResetReveal struct {
	URL   string
	Email string
	Hours int // how long it works
}

// InviteRow is one pending invitation.
type InviteRow struct {
	Email   string
	Role    string
	Expires string
}

// Accounts is the team's accounts page.
type Accounts struct {
	Rows      []AccountRow
	Invites   []InviteRow
	InviteURL string // the link just created, shown once
	// InviteSpent is the address of an invitation whose link was shown
	// already, when its page is opened again.
	InviteSpent string
	Reset       *ResetReveal
	Error       string
}

// AuditRow is one audit entry.
type AuditRow struct {
	At       string
	Actor    string
	Action   string
	Target   string // what it acted on, by its current name where it has one
	TargetID string // the id the entry names, when Target is a name for it
	Detail   string
	Address  string
}

// AuditFilter is what the audit page is narrowed to; empty fields do not
// narrow. Days are YYYY-MM-DD (UTC).
type AuditFilter struct {
	Actor  string
	Action string
	From   string
	To     string
}

// Audit is the audit log page.
type Audit struct {
	Rows     []AuditRow
	Filter   AuditFilter
	Filtered bool
	Actions  []Option // every action the log holds
	Error    string
	Older    string // link to the next older page, empty at the end
	Newer    string // link to the next newer page, empty at the start
	Newest   string // link to the first page, when not on it
}

// TenantRow is one tenant in the platform admin's list.
type TenantRow struct {
	ID       int64
	Name     string
	Created  string
	Accounts int64
	Current  bool
}

// bindingWhat says what a binding binds, in the console's words.
func bindingWhat(b BindingRow) string {
	switch b.Kind {
	case "user":
		return "display name"
	case "speaker":
		return "speaker " + b.Subject
	case "title":
		return "title"
	case "hint":
		return "harness hint " + b.Subject
	}
	return b.Kind
}
