package proxy

import (
	"encoding/json"
	"strings"

	"github.com/perpetuity/perpetuity/memory/text"
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

// scaffoldText is a text part that is only a harness's scaffolding
// (memory/text.Content finds nothing of the user's in it). What memory
// stores of the question is decided on the text alone: Claude Code moves
// its cache breakpoint to the newest block each round of a tool loop, and
// a question that changed with it (a reminder kept in round one, left out
// in round two) was a new turn each round, not the same question again.
func scaffoldText(p json.RawMessage) bool {
	cp, ok := scaffoldOf(p)
	return ok && cp.text
}

// scaffoldPart is scaffoldText without a cache breakpoint: what may be
// sent again from the history (harnessInstructions), where a breakpoint
// would count against the provider's limit a second time.
func scaffoldPart(p json.RawMessage) bool {
	cp, ok := scaffoldOf(p)
	return ok && cp.text && !cp.breakpoint
}

type scaffolding struct{ text, breakpoint bool }

func scaffoldOf(p json.RawMessage) (scaffolding, bool) {
	var cp struct {
		Type         string          `json:"type"`
		Text         string          `json:"text"`
		CacheControl json.RawMessage `json:"cache_control"`
	}
	if json.Unmarshal(p, &cp) != nil || !isTextPart(cp.Type) {
		return scaffolding{}, false
	}
	return scaffolding{
		text:       strings.TrimSpace(cp.Text) != "" && text.Content(cp.Text) == "",
		breakpoint: cp.CacheControl != nil,
	}, true
}

// questionOf is the live message's text as memory keeps it: without its
// scaffolding parts when another text part says something (scaffold
// set), else its whole text.
func questionOf(m inMessage) (question string, scaffold bool) {
	var parts []json.RawMessage
	content := rawContent(m.raw)
	if len(content) == 0 || content[0] != '[' || json.Unmarshal(content, &parts) != nil || len(parts) < 2 {
		return m.text, false
	}
	var b strings.Builder
	for _, p := range parts {
		if scaffoldText(p) {
			scaffold = true
			continue
		}
		var cp contentPart
		if json.Unmarshal(p, &cp) == nil {
			cp.join(&b)
		}
	}
	if !scaffold || strings.TrimSpace(b.String()) == "" {
		return m.text, false
	}
	return b.String(), true
}
