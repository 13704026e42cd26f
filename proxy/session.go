package proxy

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/memory/text"
	"github.com/perpetuity/perpetuity/proxy/dialect"
)

// Coding agents name their own sessions (issue 17). Without that name the
// conversation key hashes the first user message, and Codex CLI opens
// every session with the same scaffolding (AGENTS.md instructions, the
// environment context: folder, shell, date), so every session started in
// one folder became one conversation. Where a harness sends its session
// id, that id names the conversation; otherwise the hash skips the
// messages that are only scaffolding.

// harnessSession is a session id a harness sent, and where it was found.
type harnessSession struct {
	source string // the header or body field, as the binding log records it
	id     string
}

// sessionOf finds the harness's own session id: Claude Code's
// x-claude-code-session-id; Codex CLI's thread-id and session-id headers
// (older versions spell them with an underscore); else Codex's
// prompt_cache_key, which it sets to the thread id. The thread comes
// before the session: it is what a resumed Codex conversation keeps.
func sessionOf(h http.Header, in *inbound) harnessSession {
	for _, name := range [...]string{"X-Claude-Code-Session-Id", "Thread-Id", "Thread_id", "Session-Id", "Session_id"} {
		if v := strings.TrimSpace(h.Get(name)); usableSession(v) {
			return harnessSession{source: strings.ToLower(name), id: v}
		}
	}
	// Any client may set prompt_cache_key, often to one value for all its
	// users (a prompt template's name): only an id shaped like Codex's
	// (a UUID) is taken for a session.
	if in.dialect == dialect.OpenAIResponses && isUUID(in.cacheKey) {
		return harnessSession{source: "prompt_cache_key", id: in.cacheKey}
	}
	return harnessSession{}
}

// usableSession: a session id the harness chose is used only when it can
// be stored as it is; otherwise the conversation falls back to the hash
// rather than refusing a request the user did not shape.
func usableSession(s string) bool { return plainText(s, maxNameLen) }

// plainText: non-empty, at most max bytes of UTF-8 without control characters.
func plainText(s string, max int) bool {
	if s == "" || len(s) > max || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// isUUID reports the 8-4-4-4-12 hexadecimal form, any version.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
		default:
			return false
		}
	}
	return true
}

// firstContent is the first user message that says something of its own
// (a harness's scaffolding-only messages skipped), for the conversation
// hash, and the title drawn from its content.
func firstContent(in *inbound) (first, title string) {
	fallback := ""
	for _, m := range in.messages {
		if m.role != "user" || m.toolOnly {
			continue
		}
		c := text.Content(m.text)
		if c != "" {
			return m.text, firstLine(c, 80)
		}
		if fallback == "" {
			fallback = m.text
		}
	}
	// Nothing but scaffolding: hash what there is, as before.
	return fallback, firstLine(fallback, 80)
}

// maxHintLen bounds a hint as the binding log records it; a longer one
// (or one that cannot be stored as text) is not recorded.
const maxHintLen = 500

// hints are the identity hints the turn's harness sent, for the binding
// log: the API user field and the harness's session id.
func (t *turn) hints() []store.Hint {
	var out []store.Hint
	if h := strings.TrimSpace(t.in.userHint); plainText(h, maxHintLen) {
		field := "user"
		if t.in.dialect == dialect.AnthropicMessages {
			field = "metadata.user_id"
		}
		out = append(out, store.Hint{Subject: field, Value: h})
	}
	if t.session.id != "" {
		out = append(out, store.Hint{Subject: t.session.source, Value: t.session.id})
	}
	return out
}
