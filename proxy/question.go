package proxy

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/perpetuity/perpetuity/memory/text"
	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
)

// A harness puts its own scaffolding in parts beside the user's words:
// Claude Code sends the project's CLAUDE.md, as a reminder, in a text part
// of its own beside the first prompt. Stored with the prompt, it came back
// twice from the next prompt on: kept from the history as the harness's
// instructions (harnessInstructions) and quoted again in the frame, each
// copy thousands of tokens of the frame's budget, and a stale copy once
// the file changed. So memory stores the question without those parts,
// as it stores none of a harness's scaffolding-only messages; the parts
// still go to the provider with the live message (liveParts).

// part is a content part as far as scaffolding goes.
type part struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	CacheControl json.RawMessage `json:"cache_control"`
}

func partOf(p json.RawMessage) (part, bool) {
	var cp part
	return cp, json.Unmarshal(p, &cp) == nil
}

// scaffold says the part is text that is only a harness's scaffolding
// (memory/text.Content finds nothing of the user's in it). What memory
// stores of the question is decided on the text alone: Claude Code moves
// its cache breakpoint to the newest block each round of a tool loop, and
// a question that changed with it (a reminder kept in round one, left out
// in round two) was a new turn each round, not the same question again.
func (p part) scaffold() bool {
	return isTextPart(p.Type) && strings.TrimSpace(p.Text) != "" && text.Content(p.Text) == ""
}

// resendable is a scaffolding part that may be sent again from the history
// (harnessInstructions): one with a cache breakpoint would count against
// the provider's limit a second time.
func (p part) resendable() bool { return p.scaffold() && p.CacheControl == nil }

// liveQuestion is what the proxy reads of the live message beyond its
// text: the question as memory keeps it, without its scaffolding parts
// when another text part says something (scaffold set), else its whole
// text; and, when marked (Anthropic), the cache_control of its last text
// part that is not scaffolding, nil when it has none: Claude Code marks
// the newest block of the conversation so that the provider caches the
// prompt up to it.
type liveQuestion struct {
	text       string
	scaffold   bool
	breakpoint json.RawMessage
}

// questionOf reads m's parts once, and only when there can be something
// to find in them.
func questionOf(m inMessage, marked bool) liveQuestion {
	q := liveQuestion{text: m.text}
	// Text parts are joined a line apart (contentPart.join): a message
	// whose text has no line break has one text part at most, and nothing
	// to leave out; without the field it has no breakpoint. Most live
	// messages stop here, unread again.
	marked = marked && bytes.Contains(m.raw, []byte(`"cache_control"`))
	if !marked && !strings.Contains(m.text, "\n") {
		return q
	}
	var parts []json.RawMessage
	content := rawContent(m.raw)
	if len(content) == 0 || content[0] != '[' || json.Unmarshal(content, &parts) != nil {
		return q
	}
	var b strings.Builder
	for _, raw := range parts {
		p, ok := partOf(raw)
		switch {
		case !ok:
		case p.scaffold():
			q.scaffold = true
		default:
			if isTextPart(p.Type) {
				q.breakpoint = p.CacheControl
			}
			contentPart{Type: p.Type, Text: p.Text}.join(&b)
		}
	}
	if !marked || jsonx.IsNull(q.breakpoint) {
		q.breakpoint = nil
	}
	if !q.scaffold || strings.TrimSpace(b.String()) == "" {
		q.text, q.scaffold = m.text, false
	} else {
		q.text = b.String()
	}
	return q
}
