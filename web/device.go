package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// A device cookie says that this browser signed in to an account before
// (OWASP's "device cookies"). Sign-in attempts that carry a valid one for
// the account they name are throttled only on their own failures, never by
// the counts of their address, so wrong passwords sent from the same
// network cannot slow the owner down in a browser it has used.
//
// The cookie is signed with the account's own password hash as the HMAC
// key: a server-side secret that sign-in reads anyway, shared by every
// replica through the database, and replaced with the password, which then
// revokes every device cookie of the account. Someone who can read the
// hash could forge one, which exempts them from the account-wide count
// and no more: they still need the password, and could attack the hash
// offline anyway.
//
// Value: base64url(account id (8 bytes) | issued, Unix seconds (8) |
// nonce (16) | HMAC-SHA256 of those 32 bytes, labelled (32)).
const (
	devicePayload = 8 + 8 + 16
	deviceBytes   = devicePayload + sha256.Size
	deviceLabel   = "perpetuity device cookie v1\x00"
)

var deviceLen = base64.RawURLEncoding.EncodedLen(deviceBytes)

// device is a parsed device cookie, not yet verified.
type device struct {
	account int64
	issued  time.Time
	nonce   [16]byte
	mac     []byte
}

// parseDevice reads a device cookie's value; it checks the shape only.
func parseDevice(v string) (device, bool) {
	if len(v) != deviceLen {
		return device{}, false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(v)
	if err != nil || len(b) != deviceBytes {
		return device{}, false
	}
	d := device{
		account: int64(binary.BigEndian.Uint64(b[0:8])),
		issued:  time.Unix(int64(binary.BigEndian.Uint64(b[8:16])), 0),
		mac:     b[devicePayload:],
	}
	copy(d.nonce[:], b[16:devicePayload])
	return d, true
}

func (d device) payload() []byte {
	b := make([]byte, devicePayload)
	binary.BigEndian.PutUint64(b[0:8], uint64(d.account))
	binary.BigEndian.PutUint64(b[8:16], uint64(d.issued.Unix()))
	copy(b[16:], d.nonce[:])
	return b
}

func deviceMAC(key string, payload []byte) []byte {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(deviceLabel))
	m.Write(payload)
	return m.Sum(nil)
}

// vouches reports whether d was issued for account, under key, within ttl
// of now. It does the same work whatever the answer.
func (d device) vouches(account int64, key string, now time.Time, ttl time.Duration) bool {
	good := hmac.Equal(d.mac, deviceMAC(key, d.payload()))
	age := now.Sub(d.issued)
	return good && d.account == account && age > -time.Minute && age < ttl
}

// nonceHex names this browser in the throttle scope of its own failures
// (signInRules).
func (d device) nonceHex() string { return hex.EncodeToString(d.nonce[:]) }

func newDevice(account int64, key string, now time.Time) (device, string, error) {
	d := device{account: account, issued: now}
	if _, err := rand.Read(d.nonce[:]); err != nil {
		return device{}, "", fmt.Errorf("random device nonce: %w", err)
	}
	d.mac = deviceMAC(key, d.payload())
	return d, encodeDevice(d), nil
}

func encodeDevice(d device) string {
	return base64.RawURLEncoding.EncodeToString(append(d.payload(), d.mac...))
}

// trustedDevice is the browser's device cookie when it vouches for the
// account (id 0 and key the dummy hash when there is no such account).
func (c *Console) trustedDevice(ec echo.Context, account int64, key string) (device, bool) {
	ck, err := ec.Cookie(c.deviceCookie)
	if err != nil {
		return device{}, false
	}
	d, ok := parseDevice(ck.Value)
	if !ok {
		return device{}, false
	}
	return d, d.vouches(account, key, time.Now(), c.cfg.DeviceTrust) && account != 0
}

// rememberDevice gives the browser a fresh device cookie for the account
// it just signed in to, replacing any it held.
func (c *Console) rememberDevice(ec echo.Context, account int64, key string) error {
	_, v, err := newDevice(account, key, time.Now())
	if err != nil {
		return err
	}
	ec.SetCookie(&http.Cookie{
		Name: c.deviceCookie, Value: v, Path: "/", MaxAge: int(c.cfg.DeviceTrust.Seconds()),
		HttpOnly: true, Secure: c.cfg.SecureCookies, SameSite: http.SameSiteStrictMode,
	})
	return nil
}
