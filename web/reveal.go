package web

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory/store"
)

// One-time reveals: a form that makes a secret (a key, a reset link)
// stores it sealed and redirects to a page that shows it, once. Reloading
// that page repeats no form and shows no secret; it says the secret was
// shown. The secret never travels in a URL, and the database holds it
// only sealed with a key derived from the session's cookie token, which
// the database never holds: a reader of the database, or another browser,
// cannot open it. The redirect may land on any serving process.

// revealTTL is how long a secret waits for its page.
const revealTTL = 10 * time.Minute

const ctxSessionToken = "perpetuity.console.session_token"

// sessionToken is the cookie token of the request's session: the one
// startSession issued on this request, else the cookie's.
func (c *Console) sessionToken(ec echo.Context) (string, bool) {
	if t, ok := ec.Get(ctxSessionToken).(string); ok && t != "" {
		return t, true
	}
	ck, err := ec.Cookie(c.sessionCookie)
	if err != nil {
		return "", false
	}
	if _, ok := hashToken(ck.Value); !ok {
		return "", false
	}
	return ck.Value, true
}

func revealAEAD(token string) (cipher.AEAD, error) {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("perpetuity reveal v1"))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// revealAAD binds a sealed secret to its kind and tenant.
func revealAAD(kind string, tenantID int64) []byte {
	return []byte(kind + "\x00" + strconv.FormatInt(tenantID, 10))
}

func sealSecret(token string, aad []byte, secret string) ([]byte, error) {
	a, err := revealAEAD(token)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, a.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return a.Seal(nonce, nonce, []byte(secret), aad), nil
}

func openSecret(token string, aad, sealed []byte) (string, error) {
	a, err := revealAEAD(token)
	if err != nil {
		return "", err
	}
	if len(sealed) < a.NonceSize() {
		return "", errors.New("sealed secret too short")
	}
	plain, err := a.Open(nil, sealed[:a.NonceSize()], sealed[a.NonceSize():], aad)
	if err != nil {
		return "", err
	}
	return string(plain), nil
}

// putReveal seals secret for this request's session and returns the
// reveal's id, for the page the form redirects to.
func (c *Console) putReveal(ec echo.Context, tenantID int64, kind, secret string, about map[string]string) (int64, error) {
	tok, ok := c.sessionToken(ec)
	if !ok {
		return 0, errors.New("reveal: no session")
	}
	hash, _ := hashToken(tok)
	sealed, err := sealSecret(tok, revealAAD(kind, tenantID), secret)
	if err != nil {
		return 0, fmt.Errorf("seal secret: %w", err)
	}
	return c.db.PutReveal(ec.Request().Context(), tenantID, hash, kind, about, sealed, revealTTL)
}

// revealed is what a reveal page shows: the secret on its first view,
// only what it was about after (Secret empty), nothing for a reveal that
// is not this session's or has expired (About nil).
type revealed struct {
	Secret string
	About  map[string]string
}

// takeReveal reads the reveal named by :id for this session.
func (c *Console) takeReveal(ec echo.Context, tenantID int64, kind string) (revealed, error) {
	id, err := strconv.ParseInt(ec.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return revealed{}, nil
	}
	tok, ok := c.sessionToken(ec)
	if !ok {
		return revealed{}, nil
	}
	hash, _ := hashToken(tok)
	r, err := c.db.TakeReveal(ec.Request().Context(), tenantID, id, hash, kind)
	if errors.Is(err, store.ErrNotFound) {
		return revealed{}, nil
	}
	if err != nil {
		return revealed{}, err
	}
	out := revealed{About: r.About}
	if r.Sealed != nil {
		if out.Secret, err = openSecret(tok, revealAAD(kind, tenantID), r.Sealed); err != nil {
			return revealed{}, fmt.Errorf("open reveal %d: %w", id, err)
		}
	}
	return out, nil
}

// revealPath is where a form sends the browser to see its secret.
func revealPath(prefix string, id int64) string { return prefix + strconv.FormatInt(id, 10) }

// redirectToReveal answers a form that made a secret.
func redirectToReveal(ec echo.Context, prefix string, id int64) error {
	return ec.Redirect(http.StatusSeeOther, revealPath(prefix, id))
}
