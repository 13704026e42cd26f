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

// questionOf is the live message's text as memory keeps it: without its
// scaffolding parts when another text part says something (scaffold
// set), else its whole text.
func questionOf(m inMessage) (question string, scaffold bool) {
	// Text parts are joined a line apart (contentPart.join): a message
	// whose text has no line break has one text part at most, and nothing
	// to leave out. Most live messages stop here, unread again.
	if !strings.Contains(m.text, "\n") {
		return m.text, false
	}
	var parts []json.RawMessage
	content := rawContent(m.raw)
	if len(content) == 0 || content[0] != '[' || json.Unmarshal(content, &parts) != nil {
		return m.text, false
	}
	var b strings.Builder
	for _, raw := range parts {
		p, ok := partOf(raw)
		switch {
		case !ok:
		case p.scaffold():
			scaffold = true
		default:
			contentPart{Type: p.Type, Text: p.Text}.join(&b)
		}
	}
	if !scaffold || strings.TrimSpace(b.String()) == "" {
		return m.text, false
	}
	return b.String(), true
}

// breakpointOf is the cache_control of m's last text part that is not
// scaffolding, nil when it has none: Claude Code marks the newest block
// of the conversation so that the provider caches the prompt up to it.
// A message without the field is not decoded.
func breakpointOf(m inMessage) json.RawMessage {
	if !bytes.Contains(m.raw, []byte(`"cache_control"`)) {
		return nil
	}
	var parts []json.RawMessage
	if json.Unmarshal(rawContent(m.raw), &parts) != nil {
		return nil
	}
	var bp json.RawMessage
	for _, raw := range parts {
		if p, ok := partOf(raw); ok && isTextPart(p.Type) && !p.scaffold() {
			bp = p.CacheControl
		}
	}
	if jsonx.IsNull(bp) {
		return nil
	}
	return bp
}
