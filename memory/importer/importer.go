package importer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

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
	dir Directory
	cap Capturer
}

// New builds an importer.
func New(dir Directory, c Capturer) *Importer { return &Importer{dir: dir, cap: c} }

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

// Import parses and captures the input line by line. It stops at the first
// bad line (a *LineError; earlier lines stay imported) or storage error;
// callers that want all-or-nothing for bad input run Check first. progress,
// when set, is called after each line with the running totals.
func (im *Importer) Import(ctx context.Context, who memory.Who, r io.Reader, progress func(lineNo int, sofar Result)) (Result, error) {
	var total Result
	err := Parse(r, func(lineNo int, c Conversation) error {
		if err := needUser(lineNo, c, who); err != nil {
			return err
		}
		res, err := im.Conversation(ctx, who, c)
		total.add(res)
		if err != nil {
			return err
		}
		if progress != nil {
			progress(lineNo, total)
		}
		return nil
	})
	var le *LineError
	if errors.As(err, &le) {
		// A LineError from our own callback already carries the line; drop
		// the "line N:" Parse put in front of it.
		err = le
	}
	return total, err
}

// Conversation captures one checked conversation for who's tenant, as
// c.User or else who's user. Turns keep their time and speaker; a turn's
// position is its index.
func (im *Importer) Conversation(ctx context.Context, who memory.Who, c Conversation) (Result, error) {
	var res Result
	name := c.User
	if name == "" {
		name = who.UserName
	}
	if name == "" && who.UserID == 0 {
		return res, errNoUser
	}
	if name != "" && (name != who.UserName || who.UserID == 0) {
		id, err := im.dir.EnsureUser(ctx, who.TenantID, name)
		if err != nil {
			return res, err
		}
		who.UserID, who.UserName = id, name
	}
	title := c.Title
	if title == "" {
		title = defaultTitle(c.Turns)
	}
	conv, err := im.dir.EnsureConversation(ctx, who.TenantID, who.UserID, ConversationKeyPrefix+c.ID, title)
	if err != nil {
		return res, err
	}
	who.ConversationID = conv
	res.Conversations = 1
	for i, t := range c.Turns {
		got, err := im.cap.Capture(ctx, memory.Message{
			Who: who, Role: t.Role, Speaker: t.Speaker, Text: t.Text, Position: i, At: t.At,
		})
		if err != nil {
			return res, fmt.Errorf("turn %d: %w", i, err)
		}
		if got.Duplicate {
			res.Duplicates++
		} else {
			res.Turns++
		}
	}
	return res, nil
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
