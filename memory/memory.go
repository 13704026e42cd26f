// Package memory is the memory engine: it turns captured messages into
// stored items (through store) and decides what the model sees each turn
// (the frame). The proxy talks to it through the types in this file.
package memory

import (
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

// Who is the asking party of one request.
type Who struct {
	TenantID       int64
	UserID         int64
	UserName       string
	ConversationID int64
	// Pinned: the caller's key may act only as UserName (store.ScopeUser),
	// so input naming another user (an import line) is refused.
	Pinned bool
}

// Message is one message to capture.
type Message struct {
	Who
	Role     string // "user" or "assistant"
	Speaker  string // empty: resolved at render time (the user's display name, or the assistant)
	Text     string
	Position int // index in the harness's history; with Text it identifies a retry
	// Appended: the request sent no history before this message, so its
	// index says nothing of where it stands; the store places it after the
	// conversation's newest message (store.Capture's Appended).
	Appended    bool
	Interrupted bool
	At          time.Time
	// Hints are the harness's identity hints, recorded in the binding log
	// with the user and conversation they were seen with.
	Hints []store.Hint
	// Sources are the items the reply's request showed the model (its frame
	// and memory tools' results): the chain graph links the reply to those
	// it drew on.
	Sources []int64
	// SentAfter is where the request's messages after this one end (0:
	// none follow), as store.Capture's: a tool loop's next round sends the
	// question again with the exchange so far after it.
	SentAfter int
	// Stored, when set, learns what the capture stored before its commit
	// returns (store.Capture's): FrameBeside's frame goes on with it.
	Stored func(store.Captured)
	// Sending, when set, is called once the capture has prepared its
	// statements, just before it sends them (store.Capture's).
	Sending func()
	// CommitApart: the capture commits only once the caller saw it
	// succeed (store.Capture's), for a caller that refuses its request when
	// the capture fails (the live question) or charges what it stored (an
	// import line).
	CommitApart bool
}

// FrameQuery asks for the frame of one turn.
type FrameQuery struct {
	Who
	// Live is the live question's text.
	Live string
	// LiveStored says the live question was captured and is therefore the
	// last stored turn of the conversation; otherwise (probe mode, capture
	// off) it is appended after the frame.
	LiveStored bool
	// Ceiling caps the frame's tokens; 0 means the engine's default.
	Ceiling int
	// LiveItems are the stored items of the live question, which retrieval
	// must not return as its own best match.
	LiveItems []int64
	// SentAfter are stored items the request holds verbatim after the live
	// question (store.Captured's): the frame neither retrieves nor quotes
	// them, or the model would read its own turn of this tool loop twice,
	// the first time before the question.
	SentAfter []int64
	// Budget, when positive, forces the frame's token budget instead of the
	// one derived from the retrieval scores (benchmarks at fixed ceilings),
	// up to the ceiling.
	Budget int
	// Probe answers without remembering: no reheat, nothing written.
	Probe bool
	// Tools says the memory tools ride along: labels carry turn ids and a
	// trimmed frame names the tool that reaches what was left out.
	Tools bool
	Now   time.Time
	// Explain asks for Frame.Considered, for the request inspector; off,
	// the frame costs nothing more.
	Explain bool
}

// Turn is one rendered message of the frame.
type Turn struct {
	Role string // "user" or "assistant"
	Text string
}

// Frame is what the model sees in place of the harness's history.
type Frame struct {
	Turns   []Turn
	Items   int  // stored items rendered
	Tokens  int  // model tokens of the rendered text
	Trimmed bool // the cap removed something
	// Shown are the rendered items; Retrieved is the turn's whole ranked
	// retrieval before the cap (what memory_reopen reaches).
	Shown     []int64
	Retrieved []int64
	// Considered, with FrameQuery.Explain, is every rendered item and the
	// best of those the budget left out, in the frame's priority order;
	// Left counts all the candidates left out (explain.go).
	Considered []Considered
	Left       int
	// Seq is the tenant log position the frame's memory was read at: a
	// purge or redaction logged past it may not show in what the frame
	// holds (the request inspector keeps no record quoting it:
	// store.RequestRecord.Seen).
	Seq int64
}
