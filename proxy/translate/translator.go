package translate

import (
	"crypto/rand"
	"io"
	"log/slog"
	"strings"
	"time"
)

// IDs makes the identifiers and timestamps a translated response carries
// that the upstream response has no counterpart for. Implementations must be
// safe for concurrent use if the Translator is shared.
type IDs interface {
	// NewID returns prefix followed by a unique suffix.
	NewID(prefix string) string
	// Now is the current Unix time in seconds (OpenAI's "created").
	Now() int64
}

// RandomIDs is the production IDs: 24 random alphanumerics and the clock.
type RandomIDs struct{}

const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// NewID implements IDs.
func (RandomIDs) NewID(prefix string) string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // never fails (crypto/rand panics instead)
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return prefix + string(b)
}

// Now implements IDs.
func (RandomIDs) Now() int64 { return time.Now().Unix() }

// Translator translates between the dialects. The zero value is not usable;
// build one with New. It holds no per-request state and is safe to share.
type Translator struct {
	log *slog.Logger
	ids IDs
}

// New returns a Translator logging dropped fields at debug level to log
// (nil: discard) and taking ids from ids (nil: RandomIDs).
func New(log *slog.Logger, ids IDs) *Translator {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if ids == nil {
		ids = RandomIDs{}
	}
	return &Translator{log: log, ids: ids}
}

// WithLogger returns a copy of t logging to log, for per-request attributes.
func (t *Translator) WithLogger(log *slog.Logger) *Translator {
	c := *t
	if log != nil {
		c.log = log
	}
	return &c
}

func (t *Translator) dropped(what, why string) {
	t.log.Debug("translate: dropped", "field", what, "reason", why)
}

// DefaultMaxTokens is the max_tokens sent to Anthropic when the OpenAI
// request set none (OpenAI then means "as much as the model allows";
// Anthropic requires a number). The values stay well under each family's
// output ceiling so a non-streaming call does not run for many minutes:
// 4096 for the Claude 3 generation (its ceiling), 8192 for Claude 3.5,
// 16384 for Claude 3.7 and 4.x and anything newer or unknown.
func DefaultMaxTokens(model string) int64 {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	switch {
	case strings.Contains(m, "claude-3-5") || strings.Contains(m, "claude-3.5"):
		return 8192
	case strings.Contains(m, "claude-3-7") || strings.Contains(m, "claude-3.7"):
		return 16384
	case strings.HasPrefix(m, "claude-3") || strings.HasPrefix(m, "claude-2") || strings.HasPrefix(m, "claude-instant"):
		return 4096
	}
	return 16384
}

// isOpenAIReasoningModel reports whether model is an OpenAI reasoning model,
// which takes max_completion_tokens and rejects sampling parameters.
func isOpenAIReasoningModel(model string) bool {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		if !strings.HasPrefix(m, "openai/") {
			return false
		}
		m = m[i+1:]
	}
	if strings.HasPrefix(m, "gpt-5") {
		return !strings.Contains(m, "chat")
	}
	return len(m) >= 2 && m[0] == 'o' && m[1] >= '1' && m[1] <= '9'
}

// sanitizeToolID keeps id but replaces characters Anthropic rejects; the
// mapping is the same everywhere so calls and results still pair up.
func sanitizeToolID(id string) string {
	ok := true
	for i := 0; i < len(id); i++ {
		if !isIDByte(id[i]) {
			ok = false
			break
		}
	}
	if ok {
		return id
	}
	b := []byte(id)
	for i := range b {
		if !isIDByte(b[i]) {
			b[i] = '_'
		}
	}
	return string(b)
}

func isIDByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}
