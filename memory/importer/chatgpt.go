package importer

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ChatGPT's data export holds conversations.json: one JSON array of
// conversations, each a tree of message nodes ("mapping", node id → node
// with parent and children), because an edited or regenerated message
// forks the conversation. The branch the user last saw ends at
// "current_node"; walking parents from there to the root and reversing
// gives the conversation as it reads. Without a usable current_node the
// walk starts at the root and follows the last child (the latest fork).
//
// What becomes a turn: user and assistant messages whose content is text
// ("text", or the strings and voice transcriptions of "multimodal_text"),
// addressed to everyone. Left out: system and tool messages, messages the
// export marks hidden (custom instructions, scaffolding), assistant
// messages addressed to a tool (code it runs, searches), weight-0 messages,
// and non-text content (images, code output, browsing, reasoning
// summaries). A conversation with no turn left is skipped.
//
// A turn's time is its message's create_time, else the previous turn's,
// else the conversation's create_time. The conversation id is "chatgpt-"
// and ChatGPT's conversation id, so importing the same export twice stores
// nothing new, and a harness can continue one by that id.

// ChatGPTIDPrefix starts the id of every conversation imported from ChatGPT.
const ChatGPTIDPrefix = "chatgpt-"

// ChatGPTStats counts what reading a ChatGPT export found.
type ChatGPTStats struct {
	Conversations int `json:"conversations"` // converted, with at least one turn
	Turns         int `json:"turns"`
	Skipped       int `json:"skipped"` // conversations without any text turn
}

type gptConversation struct {
	ID             string             `json:"id"`
	ConversationID string             `json:"conversation_id"`
	Title          *string            `json:"title"`
	CreateTime     gptTime            `json:"create_time"`
	UpdateTime     gptTime            `json:"update_time"`
	CurrentNode    string             `json:"current_node"`
	Mapping        map[string]gptNode `json:"mapping"`
}

type gptNode struct {
	Message  *gptMessage `json:"message"`
	Parent   *string     `json:"parent"`
	Children []string    `json:"children"`
}

type gptMessage struct {
	Author struct {
		Role string  `json:"role"`
		Name *string `json:"name"`
	} `json:"author"`
	CreateTime gptTime `json:"create_time"`
	Content    struct {
		ContentType string            `json:"content_type"`
		Parts       []json.RawMessage `json:"parts"`
	} `json:"content"`
	Recipient string   `json:"recipient"`
	Weight    *float64 `json:"weight"`
	Metadata  struct {
		Hidden bool `json:"is_visually_hidden_from_conversation"`
	} `json:"metadata"`
}

// gptTime is seconds since the epoch with a fraction; null, absent or
// unusable is the zero time.
type gptTime struct{ t time.Time }

func (g *gptTime) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(bytes.TrimSpace(b)), `"`)
	f, err := strconv.ParseFloat(s, 64)
	// Before 2000 or past 2200 is a broken value, not a time.
	if err != nil || math.IsNaN(f) || f < 946684800 || f > 7258118400 {
		g.t = time.Time{}
		return nil
	}
	g.t = time.UnixMicro(int64(math.Round(f * 1e6))).UTC()
	return nil
}

// ReadChatGPT reads ChatGPT's conversations.json and calls fn with each
// conversation that has a turn, converted and checked as a JSONL line would
// be. index is the conversation's 1-based place in the array. It stops at
// the first malformed conversation, naming it, or at fn's first error.
func ReadChatGPT(r io.Reader, fn func(index int, c Conversation) error) (ChatGPTStats, error) {
	var st ChatGPTStats
	dec := json.NewDecoder(r)
	tok, err := dec.Token()
	if err != nil {
		return st, fmt.Errorf("not ChatGPT's conversations.json: %w", jsonError(err))
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return st, errors.New("not ChatGPT's conversations.json: want a JSON array of conversations")
	}
	seen := map[string]int{}
	for index := 1; dec.More(); index++ {
		var g gptConversation
		if err := dec.Decode(&g); err != nil {
			return st, fmt.Errorf("conversation %d: %w", index, jsonError(err))
		}
		c, err := convertChatGPT(g)
		if err != nil {
			return st, fmt.Errorf("conversation %d (%q): %w", index, c.Title, err)
		}
		if len(c.Turns) == 0 {
			st.Skipped++
			continue
		}
		if prev, dup := seen[c.ID]; dup {
			return st, fmt.Errorf("conversation %d (%q): the same conversation id as conversation %d", index, c.Title, prev)
		}
		seen[c.ID] = index
		if err := fn(index, c); err != nil {
			return st, err
		}
		st.Conversations++
		st.Turns += len(c.Turns)
	}
	if _, err := dec.Token(); err != nil {
		return st, fmt.Errorf("after the last conversation: %w", jsonError(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return st, errors.New("unexpected data after the array of conversations")
	}
	return st, nil
}

// ChatGPTToJSONL converts ChatGPT's conversations.json into the JSONL
// format, one line per conversation with a turn.
func ChatGPTToJSONL(r io.Reader, w io.Writer) (ChatGPTStats, error) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return ReadChatGPT(r, func(_ int, c Conversation) error { return enc.Encode(c) })
}

// convertChatGPT turns one conversation into a checked Conversation (no
// turns when nothing in it is text); Title is set even on error.
func convertChatGPT(g gptConversation) (Conversation, error) {
	title := ""
	if g.Title != nil {
		title = clip(strings.TrimSpace(*g.Title), MaxTitleBytes)
	}
	path, err := mainBranch(g)
	if err != nil {
		return Conversation{Title: title}, err
	}
	w := wireConversation{ID: chatGPTID(g), Title: title}
	last := time.Time{}
	for _, m := range path {
		text, ok := chatGPTText(m)
		if !ok {
			continue
		}
		at := m.CreateTime.t
		for _, fallback := range []time.Time{last, g.CreateTime.t, g.UpdateTime.t} {
			if !at.IsZero() {
				break
			}
			at = fallback
		}
		if at.IsZero() {
			return Conversation{Title: title}, errors.New("a message has no create_time, and neither has the conversation")
		}
		last = at
		speaker := ""
		if m.Author.Name != nil {
			speaker = clip(strings.TrimSpace(*m.Author.Name), MaxNameBytes)
		}
		w.Turns = append(w.Turns, wireTurn{Role: m.Author.Role, Speaker: speaker, Text: text, At: at.Format(time.RFC3339Nano)})
	}
	if len(w.Turns) == 0 {
		return Conversation{Title: title}, nil
	}
	c, err := check(w)
	if err != nil {
		return Conversation{Title: title}, err
	}
	return c, nil
}

// mainBranch is the messages along the branch the user last saw, root first.
func mainBranch(g gptConversation) ([]*gptMessage, error) {
	if len(g.Mapping) == 0 {
		return nil, nil
	}
	var ids []string
	if _, ok := g.Mapping[g.CurrentNode]; ok {
		seen := map[string]bool{}
		for id := g.CurrentNode; id != ""; {
			n, ok := g.Mapping[id]
			if !ok {
				break // a parent outside the mapping ends the branch
			}
			if seen[id] {
				return nil, fmt.Errorf("mapping: node %q is its own ancestor", id)
			}
			seen[id] = true
			ids = append(ids, id)
			id = ""
			if n.Parent != nil {
				id = *n.Parent
			}
		}
		for i, j := 0, len(ids)-1; i < j; i, j = i+1, j-1 {
			ids[i], ids[j] = ids[j], ids[i]
		}
	} else {
		ids = lastChildBranch(g.Mapping)
	}
	out := make([]*gptMessage, 0, len(ids))
	for _, id := range ids {
		if m := g.Mapping[id].Message; m != nil {
			out = append(out, m)
		}
	}
	return out, nil
}

// lastChildBranch walks from the root along each node's last child. The
// root is the node without a parent in the mapping (the first by id if an
// export ever has several).
func lastChildBranch(mapping map[string]gptNode) []string {
	var roots []string
	for id, n := range mapping {
		if n.Parent == nil || *n.Parent == "" {
			roots = append(roots, id)
		} else if _, ok := mapping[*n.Parent]; !ok {
			roots = append(roots, id)
		}
	}
	if len(roots) == 0 {
		return nil
	}
	sort.Strings(roots)
	var ids []string
	seen := map[string]bool{}
	for id := roots[0]; id != "" && !seen[id]; {
		seen[id] = true
		ids = append(ids, id)
		next := ""
		children := mapping[id].Children
		for i := len(children) - 1; i >= 0; i-- {
			if _, ok := mapping[children[i]]; ok {
				next = children[i]
				break
			}
		}
		id = next
	}
	return ids
}

// chatGPTText is a message's visible text, and whether it is a turn at all.
func chatGPTText(m *gptMessage) (string, bool) {
	if m.Author.Role != "user" && m.Author.Role != "assistant" {
		return "", false
	}
	if m.Metadata.Hidden || (m.Weight != nil && *m.Weight == 0) {
		return "", false
	}
	if m.Recipient != "" && m.Recipient != "all" {
		return "", false
	}
	if m.Content.ContentType != "text" && m.Content.ContentType != "multimodal_text" {
		return "", false
	}
	var parts []string
	for _, raw := range m.Content.Parts {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			parts = append(parts, s)
			continue
		}
		// Voice conversations carry what was said as a transcription part.
		var obj struct {
			ContentType string `json:"content_type"`
			Text        string `json:"text"`
		}
		if json.Unmarshal(raw, &obj) == nil && obj.ContentType == "audio_transcription" {
			parts = append(parts, obj.Text)
		}
	}
	text := strings.ReplaceAll(strings.Join(nonBlank(parts), "\n\n"), "\x00", "")
	if strings.TrimSpace(text) == "" {
		return "", false
	}
	return text, true
}

func nonBlank(ss []string) []string {
	out := ss[:0]
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}

// chatGPTID is "chatgpt-" and ChatGPT's id for the conversation; an export
// without one gets a hash of its title and start, stable across exports.
func chatGPTID(g gptConversation) string {
	id := strings.TrimSpace(g.ConversationID)
	if id == "" {
		id = strings.TrimSpace(g.ID)
	}
	if id == "" || len(ChatGPTIDPrefix)+len(id) > MaxNameBytes || strings.IndexByte(id, 0) >= 0 {
		title := ""
		if g.Title != nil {
			title = *g.Title
		}
		sum := sha256.Sum256([]byte(id + "\x00" + title + "\x00" + g.CreateTime.t.Format(time.RFC3339Nano)))
		id = hex.EncodeToString(sum[:12])
	}
	return ChatGPTIDPrefix + id
}
