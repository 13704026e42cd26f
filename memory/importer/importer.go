package importer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/store"
)

// Directory finds or creates memory users and conversations (store.DB).
type Directory interface {
	EnsureUser(ctx context.Context, tenantID int64, name string) (int64, error)
	EnsureConversation(ctx context.Context, tenantID, userID int64, extKey, title string) (int64, error)
}

// Capturer stores one message whole or not at all (memory.Engine).
type Capturer interface {
	Capture(ctx context.Context, m memory.Message) (store.Captured, error)
}

// ConversationKeyPrefix puts imported ids in the name space of the proxy's
// X-Perpetuity-Conversation header ("h:" + header value), so a harness
// naming the same id continues the imported conversation, and resending the
// imported turns at their positions is recognised as nothing new.
const ConversationKeyPrefix = "h:"

// Result counts what an import did. Turns are newly stored turns;
// Duplicates were already stored (a re-import) and left as they were.
type Result struct {
	Conversations int `json:"conversations"`
	Turns         int `json:"turns"`
	Duplicates    int `json:"duplicates"`
}

func (r *Result) add(o Result) {
	r.Conversations += o.Conversations
	r.Turns += o.Turns
	r.Duplicates += o.Duplicates
}

// Importer loads conversations through the capture path.
type Importer struct {
	dir     Directory
	cap     Capturer
	timeout time.Duration // each database step of the line in flight; 0: none
}

// Option configures an Importer.
type Option func(*Importer)

// CaptureTimeout bounds each step of storing a line (finding the user and
// the conversation, capturing one turn), as PERPETUITY_CAPTURE_TIMEOUT
// bounds the proxy's captures: the line in flight is stored detached from
// the caller, so this is what keeps a stalled database from holding it
// forever.
func CaptureTimeout(d time.Duration) Option { return func(im *Importer) { im.timeout = d } }

// New builds an importer.
func New(dir Directory, c Capturer, opts ...Option) *Importer {
	im := &Importer{dir: dir, cap: c}
	for _, o := range opts {
		o(im)
	}
	return im
}

// Budget is the importing key's token limits (the proxy's per-key
// buckets): each line needs the budget not spent to start, and what it
// stored is charged once it is stored.
type Budget interface {
	// Allow is nil when the key may spend tokens now; otherwise how long
	// until it may, and an error naming the spent limit.
	Allow(ctx context.Context) (time.Duration, error)
	// Charge counts tokens the import stored.
	Charge(tokens int)
}

// tokens is what stored text costs against a token budget: four bytes a
// token, the proxy's estimate where a provider reports no usage. It needs
// no tokenizer, and duplicates (a file imported again) cost nothing, so
// resuming an import by sending the whole file again makes progress.
func tokens(textBytes int) int { return (textBytes + 3) / 4 }

// Stopped is an import that ended at a line boundary before its input did:
// the lines before Line are stored whole, none from Line on. Importing the
// file again (or its lines from Line on) completes it.
type Stopped struct {
	Line int
	// Limited: the key's token budget ran out, and RetryAfter is how long
	// until it refills; otherwise the caller's context ended (the client
	// left, the command was interrupted) and Err is its cause.
	Limited    bool
	RetryAfter time.Duration
	Err        error
}

func (s *Stopped) Error() string {
	return fmt.Sprintf("stopped before line %d (the lines before it are stored; import again from line %d, or the whole file: stored lines are skipped and not counted): %v", s.Line, s.Line, s.Err)
}

func (s *Stopped) Unwrap() error { return s.Err }

// errNoUser is bad input: the line names no user and the caller gave none.
var errNoUser = errors.New(`user: required here (no default user was given; add "user" to the line or pass --user)`)

// Check reads the whole input and reports its first bad line as a
// *LineError, without storing anything. who supplies the default user: a
// line without "user" is bad when who has no user.
func Check(r io.Reader, who memory.Who) error {
	return Parse(r, func(lineNo int, c Conversation) error { return needUser(lineNo, c, who) })
}

func needUser(lineNo int, c Conversation, who memory.Who) error {
	if c.User == "" && who.UserID == 0 && who.UserName == "" {
		return &LineError{Line: lineNo, Err: errNoUser}
	}
	if who.Pinned && c.User != "" && c.User != who.UserName {
		return &LineError{Line: lineNo, Err: fmt.Errorf("user: %w to memory user %q; leave \"user\" out or repeat it", ErrPinnedUser, who.UserName)}
	}
	return nil
}

// ErrPinnedUser is an import line naming another memory user than the one
// the caller's key is pinned to (issue 15, item 114). The handler answers
// it with a 403: the input is well formed, the key may not do it.
var ErrPinnedUser = errors.New("this Perpetuity key is pinned")

// Import parses and captures the input line by line, without limits. It
// stops at the first bad line (a *LineError; earlier lines stay imported)
// or storage error; callers that want all-or-nothing for bad input run
// Check first. progress, when set, is called after each line with the
// running totals.
func (im *Importer) Import(ctx context.Context, who memory.Who, r io.Reader, progress func(lineNo int, sofar Result)) (Result, error) {
	return im.ImportWithin(ctx, who, r, nil, progress)
}

// ImportWithin is Import under a token budget (nil: unlimited): a line
// starts only while the budget allows, and the turns it newly stored are
// charged after it, so one line may take the budget past its limit, as one
// proxied reply may. Between lines it also looks at ctx: once ctx has
// ended, or the budget refuses, the import stops there with a *Stopped
// naming the line. The line in flight is not cut short by ctx: it is
// stored whole, each step within the capture timeout, so an import that
// ends early leaves whole lines only.
func (im *Importer) ImportWithin(ctx context.Context, who memory.Who, r io.Reader, budget Budget, progress func(lineNo int, sofar Result)) (Result, error) {
	var total Result
	err := Parse(r, func(lineNo int, c Conversation) error {
		if err := needUser(lineNo, c, who); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return &Stopped{Line: lineNo, Err: context.Cause(ctx)}
		}
		if budget != nil {
			if wait, err := budget.Allow(ctx); err != nil {
				return &Stopped{Line: lineNo, Limited: true, RetryAfter: wait, Err: err}
			}
		}
		res, stored, err := im.conversation(context.WithoutCancel(ctx), who, c)
		total.add(res)
		if budget != nil {
			budget.Charge(tokens(stored))
		}
		if err != nil {
			return err
		}
		if progress != nil {
			progress(lineNo, total)
		}
		return nil
	})
	// Errors from our own callback already carry the line; drop the
	// "line N:" Parse put in front of them.
	var le *LineError
	var st *Stopped
	switch {
	case errors.As(err, &le):
		err = le
	case errors.As(err, &st):
		err = st
	}
	return total, err
}

// step is the context of one database step of a line: ctx within the
// capture timeout.
func (im *Importer) step(ctx context.Context) (context.Context, context.CancelFunc) {
	if im.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, im.timeout)
}

// Conversation captures one checked conversation for who's tenant, as
// c.User or else who's user. Turns keep their time and speaker; a turn's
// position is its index.
func (im *Importer) Conversation(ctx context.Context, who memory.Who, c Conversation) (Result, error) {
	res, _, err := im.conversation(ctx, who, c)
	return res, err
}

// conversation is Conversation, also counting the text bytes of the turns
// it newly stored.
func (im *Importer) conversation(ctx context.Context, who memory.Who, c Conversation) (res Result, stored int, err error) {
	name := c.User
	if name == "" {
		name = who.UserName
	}
	if name == "" && who.UserID == 0 {
		return res, 0, errNoUser
	}
	if name != "" && (name != who.UserName || who.UserID == 0) {
		sctx, cancel := im.step(ctx)
		id, err := im.dir.EnsureUser(sctx, who.TenantID, name)
		cancel()
		if err != nil {
			return res, 0, err
		}
		who.UserID, who.UserName = id, name
	}
	title := c.Title
	if title == "" {
		title = defaultTitle(c.Turns)
	}
	sctx, cancel := im.step(ctx)
	conv, err := im.dir.EnsureConversation(sctx, who.TenantID, who.UserID, ConversationKeyPrefix+c.ID, title)
	cancel()
	if err != nil {
		return res, 0, err
	}
	who.ConversationID = conv
	res.Conversations = 1
	for i, t := range c.Turns {
		sctx, cancel := im.step(ctx)
		// Committed apart: what the import stored is what the limits
		// charge, so a line whose capture failed, or outlasted a client
		// that left, must not be stored behind the count's back.
		got, err := im.cap.Capture(sctx, memory.Message{
			Who: who, Role: t.Role, Speaker: t.Speaker, Text: t.Text, Position: i, At: t.At, CommitApart: true,
		})
		cancel()
		if err != nil {
			return res, stored, fmt.Errorf("turn %d: %w", i, err)
		}
		if got.Duplicate {
			res.Duplicates++
		} else {
			res.Turns++
			stored += len(t.Text)
		}
	}
	return res, stored, nil
}

// defaultTitle is the first line of the first user turn, as the proxy
// titles conversations it sees.
func defaultTitle(turns []Turn) string {
	for _, t := range turns {
		if t.Role != "user" {
			continue
		}
		s := strings.TrimSpace(t.Text)
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[:i]
		}
		if len(s) > 80 {
			s = strings.ToValidUTF8(s[:80], "") + "…"
		}
		return s
	}
	return ""
}
