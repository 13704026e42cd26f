package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/store"
)

// Directory resolves who is asking.
type Directory interface {
	ResolveKey(ctx context.Context, key string) (store.KeyIdentity, error)
	// Users and conversations are created on first sight, or only looked
	// up for a request that stores nothing (users.go).
	UserByName(ctx context.Context, tenantID int64, name string) (int64, error)
	EnsureUserForKey(ctx context.Context, tenantID, keyID int64, name string, perDay int) (int64, error)
	EnsureConversation(ctx context.Context, tenantID, userID int64, extKey, title string) (int64, error)
	FindConversation(ctx context.Context, tenantID, userID int64, extKey string) (int64, error)
	// RecordRequests stores request records, whole or not at all (records.go).
	RecordRequests(ctx context.Context, recs []store.RequestRecord) error
	TouchKey(ctx context.Context, tenantID, keyID int64) error
}

// Header names are a contract with harnesses; the README documents them.
const (
	HeaderKey          = "X-Perpetuity-Key"
	HeaderUser         = "X-Perpetuity-User"
	HeaderConversation = "X-Perpetuity-Conversation"
	HeaderRecall       = "X-Perpetuity-Recall"
	HeaderCapture      = "X-Perpetuity-Capture"
	HeaderTools        = "X-Perpetuity-Tools"
	HeaderMode         = "X-Perpetuity-Mode"
	HeaderFrameBudget  = "X-Perpetuity-Frame-Budget"
	HeaderRequestID    = "X-Perpetuity-Request-Id"
	HeaderFrameItems   = "X-Perpetuity-Frame-Items"
	HeaderFrameTokens  = "X-Perpetuity-Frame-Tokens"
	HeaderFrameTrimmed = "X-Perpetuity-Frame-Trimmed"
	HeaderConvID       = "X-Perpetuity-Conversation-Id"
)

// maxNameLen bounds user and conversation names taken from headers.
const maxNameLen = 200

// perpetuityKey reads the Perpetuity key from the path (/k/<key>/...) or the
// X-Perpetuity-Key header. Both present and different is an error rather
// than a silent choice.
func perpetuityKey(c echo.Context) (string, error) {
	pathKey := c.Param("key")
	hdr := c.Request().Header.Values(HeaderKey)
	if len(hdr) > 1 {
		return "", &APIError{Status: http.StatusBadRequest, Kind: InvalidRequest, Message: HeaderKey + " was sent more than once"}
	}
	headerKey := ""
	if len(hdr) == 1 {
		headerKey = strings.TrimSpace(hdr[0])
	}
	switch {
	case pathKey != "" && headerKey != "" && pathKey != headerKey:
		return "", &APIError{Status: http.StatusBadRequest, Kind: InvalidRequest, Message: "the Perpetuity key in the URL and in " + HeaderKey + " differ"}
	case pathKey != "":
		return pathKey, nil
	case headerKey != "":
		return headerKey, nil
	}
	return "", &APIError{Status: http.StatusUnauthorized, Kind: Authentication,
		Message: "missing Perpetuity key: use the proxy URL /k/<key>/v1 or send " + HeaderKey}
}

// resolveIdentity turns the key and headers into who is asking.
func (p *Proxy) resolveIdentity(ctx context.Context, c echo.Context) (memory.Who, store.KeyIdentity, error) {
	key, err := perpetuityKey(c)
	if err != nil {
		return memory.Who{}, store.KeyIdentity{}, err
	}
	k, err := p.keys.resolve(ctx, key, p.dir.ResolveKey)
	if errors.Is(err, store.ErrNotFound) {
		return memory.Who{}, k, &APIError{Status: http.StatusUnauthorized, Kind: Authentication, Message: "invalid or revoked Perpetuity key"}
	}
	if err != nil {
		return memory.Who{}, k, p.memoryUnavailable(c, "key lookup", err)
	}
	c.Set("perpetuity.tenant_id", k.TenantID) // for the access log (app/metrics.go)
	// Checked on every request, cached key or not: the end holds from its
	// instant, not from the cache entry's.
	if now := time.Now(); k.Expired(now) {
		return memory.Who{}, k, &APIError{Status: http.StatusUnauthorized, Kind: Authentication,
			Message: "Perpetuity key expired at " + k.ExpiresAt.UTC().Format(time.RFC3339) +
				" (key expired): rotate it or create a new key in the console"}
	}
	p.touchKey(k)
	return memory.Who{TenantID: k.TenantID, UserID: k.UserID, UserName: k.UserName, Pinned: k.Pinned()}, k, nil
}

// chooseUser applies DESIGN §2: X-Perpetuity-User, else the API-standard
// user field where the tenant turned that on, else the key's user; a key
// pinned to its user may name no other (scopeAllows).
func (p *Proxy) chooseUser(ctx context.Context, c echo.Context, who memory.Who, k store.KeyIdentity, hint string) (memory.Who, error) {
	hint, err := scopeAllows(k, c.Request().Header.Get(HeaderUser), hint)
	if err != nil {
		return who, err
	}
	name := strings.TrimSpace(c.Request().Header.Get(HeaderUser))
	if name == "" && k.UserFieldIdentity {
		name = strings.TrimSpace(hint)
	}
	if name == "" || name == who.UserName {
		return who, nil
	}
	if len(name) > maxNameLen {
		return who, errBadRequest("%s: longer than %d bytes", HeaderUser, maxNameLen)
	}
	id, err := p.memoryUser(ctx, c, who.TenantID, k, name)
	if err != nil {
		return who, err
	}
	who.UserID, who.UserName = id, name
	return who, nil
}

// conversationKey is X-Perpetuity-Conversation, else the harness's own
// session id (session.go), else the Responses conversation id, else a
// deterministic hash of the user, the system prompt and the first user
// message with content of its own: a harness that resends its whole
// history keeps one conversation.
func conversationKey(c echo.Context, who memory.Who, in *inbound, chains *responseChains) (key, title string, hs harnessSession, err error) {
	key, title, hs, err = namedConversation(c, who, in)
	if err != nil || !plainText(in.prevResponse, maxNameLen) {
		return key, title, hs, err
	}
	// Continuing a response this process relayed: its conversation, after
	// its turn, whichever rule named the conversation (chains.go).
	if l, ok := chains.get(chainKey{tenant: who.TenantID, user: who.UserID, response: in.prevResponse}); ok && (key == "" || key == l.conv) {
		in.posBase = l.next
		return l.conv, title, hs, nil
	}
	if key == "" {
		key = "r:" + in.prevResponse
	}
	return key, title, hs, nil
}

// namedConversation is the conversation key the request's headers or
// fields name, or its hash; "" for a request continuing a response, which
// conversationKey places.
func namedConversation(c echo.Context, who memory.Who, in *inbound) (key, title string, hs harnessSession, err error) {
	first, title := firstContent(in)
	if h := strings.TrimSpace(c.Request().Header.Get(HeaderConversation)); h != "" {
		if len(h) > maxNameLen {
			return "", "", hs, errBadRequest("%s: longer than %d bytes", HeaderConversation, maxNameLen)
		}
		return "h:" + h, title, hs, nil
	}
	if hs = sessionOf(c.Request().Header, in); hs.id != "" {
		return "x:" + hs.id, title, hs, nil
	}
	if in.session != "" && len(in.session) <= maxNameLen {
		// The harness's own conversation id (Responses "conversation"):
		// its requests carry only the new items, so no first message to hash.
		return "s:" + in.session, title, hs, nil
	}
	if plainText(in.prevResponse, maxNameLen) {
		return "", title, hs, nil
	}
	s := sha256.New()
	s.Write([]byte(strconv.FormatInt(who.UserID, 10)))
	s.Write([]byte{0})
	s.Write([]byte(in.system))
	s.Write([]byte{0})
	s.Write([]byte(first))
	return "auto:" + hex.EncodeToString(s.Sum(nil))[:32], title, hs, nil
}

func firstLine(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "…"
	}
	return s
}

// touchInterval is how often a key's "last used" time is written.
const touchInterval = time.Minute

// touchKey records a key's use for the console, at most once per interval
// per process and off the request path.
func (p *Proxy) touchKey(k store.KeyIdentity) {
	if !p.touched.due(k.KeyID, time.Now()) {
		return
	}
	p.background(func() {
		ctx, cancel := context.WithTimeout(context.Background(), p.cfg.CaptureTimeout)
		defer cancel()
		if err := p.dir.TouchKey(ctx, k.TenantID, k.KeyID); err != nil {
			p.log.Warn("record key use failed", "tenant", k.TenantID, "key_id", k.KeyID, "err", err)
		}
	})
}
