package importer

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

// ExportSource reads a memory user's stored memory (store.DB).
type ExportSource interface {
	ExportUser(ctx context.Context, tenantID, userID int64, fn func(store.ExportConversation) error) error
}

// Export writes a memory user's whole memory as JSON Lines in the format
// Parse reads, one conversation per line in the order they were started,
// turns in conversation order with their speaker and original time (UTC).
//
// Lines carry no "user": the file is one user's memory, and the importer
// puts it into the user it is told (--user, or the importing key's user).
// Imported conversations keep their id (the X-Perpetuity-Conversation
// value); conversations the proxy named itself export their internal key
// ("auto:…", "s:…") as the id. What the format cannot say is dropped: the
// interrupted flag of a reply cut short. Everything else is written exactly
// as the importer would store it again (trimmed names, a default title where
// none was stored), so importing an export and exporting again gives the
// same bytes.
//
// Nothing is written for a conversation until it is read whole; an error
// can leave the output ending after an earlier line.
func Export(ctx context.Context, src ExportSource, tenantID, userID int64, w io.Writer) (Result, error) {
	var res Result
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	seen := map[string]bool{}
	err := src.ExportUser(ctx, tenantID, userID, func(sc store.ExportConversation) error {
		c, ok, err := exportConversation(sc, seen)
		if err != nil || !ok {
			return err
		}
		if err := enc.Encode(c); err != nil {
			return fmt.Errorf("write conversation %q: %w", c.ID, err)
		}
		res.Conversations++
		res.Turns += len(c.Turns)
		return nil
	})
	if ferr := bw.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("write export: %w", ferr)
	}
	return res, err
}

// exportConversation turns a stored conversation into a line that passes
// check unchanged; ok is false for a conversation with nothing to say.
func exportConversation(sc store.ExportConversation, seen map[string]bool) (Conversation, bool, error) {
	w := wireConversation{ID: exportID(sc, seen), Title: clip(strings.TrimSpace(sc.Title), MaxTitleBytes)}
	for _, t := range sc.Turns {
		if strings.TrimSpace(t.Text) == "" {
			continue
		}
		w.Turns = append(w.Turns, wireTurn{
			Role: t.Role, Speaker: clip(strings.TrimSpace(t.Speaker), MaxNameBytes),
			Text: t.Text, At: t.At.UTC().Format(time.RFC3339Nano),
		})
	}
	if len(w.Turns) == 0 {
		return Conversation{}, false, nil
	}
	c, err := check(w)
	if err != nil {
		return c, false, fmt.Errorf("conversation %d: %w", sc.ID, err)
	}
	if c.Title == "" {
		c.Title = defaultTitle(c.Turns)
	}
	return c, true, nil
}

// exportID is the conversation's id in the file: the header value it was
// imported or named under, else its internal key. An id too long for the
// format, or already taken in this file, gets a short hash so the file
// still imports.
func exportID(sc store.ExportConversation, seen map[string]bool) string {
	id := strings.TrimSpace(strings.TrimPrefix(sc.ExtKey, ConversationKeyPrefix))
	if id == "" {
		id = "conversation-" + strconv.FormatInt(sc.ID, 10)
	}
	if len(id) > MaxNameBytes || seen[id] {
		sum := sha256.Sum256([]byte(sc.ExtKey + "\x00" + strconv.FormatInt(sc.ID, 10)))
		suffix := "~" + hex.EncodeToString(sum[:8])
		id = clip(id, MaxNameBytes-len(suffix)) + suffix
	}
	seen[id] = true
	return id
}

// clip cuts s to at most max bytes at a rune boundary.
func clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return strings.TrimSpace(strings.ToValidUTF8(s[:max], ""))
}
