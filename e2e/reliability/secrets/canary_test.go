package secrets

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"

	"github.com/perpetuity/perpetuity/memory/store"
)

// canaries is one failure path's own set of secrets: every path has its own
// tenant, keys and passwords, so an occurrence found anywhere names the path
// that put it there.
type canaries struct {
	path      string
	openai    string // provider key sent as Authorization: Bearer
	anthropic string // provider key sent as x-api-key
	ppk       string // a real Perpetuity key (its tenant's first key)
	fake      string // a ppk_ key that does not exist
	tenantID  int64
}

func randomTail(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

func newCanaries(path string) canaries {
	return canaries{
		path:      path,
		openai:    "sk-canary-" + randomTail(32),
		anthropic: "sk-ant-canary-" + randomTail(32),
		fake:      "ppk_canaryFAKE" + randomTail(32),
	}
}

// needle is one string whose presence in a place is a leak.
type needle struct {
	secret string // which secret, for the report ("openai", "ppk", ...)
	value  []byte
}

// needlesFor is what to look for from one secret: the whole value, its hex
// and base64 forms, and every 8-byte window of the part that is never shown
// (for a Perpetuity key, what follows the prefix the console displays).
func needlesFor(name, value string, shown int) []needle {
	out := []needle{
		{name, []byte(value)},
		{name + " (hex)", []byte(hex.EncodeToString([]byte(value)))},
		{name + " (base64)", []byte(base64.StdEncoding.EncodeToString([]byte(value)))},
		{name + " (base64url)", []byte(base64.RawURLEncoding.EncodeToString([]byte(value)))},
	}
	tail := value[shown:]
	for i := 0; i+8 <= len(tail); i += 8 {
		out = append(out, needle{name + " (part)", []byte(tail[i : i+8])})
	}
	if len(tail) >= 8 && len(tail)%8 != 0 {
		out = append(out, needle{name + " (part)", []byte(tail[len(tail)-8:])})
	}
	return out
}

// needles are every string of this path whose presence anywhere is a leak.
// Provider keys must not even be stored hashed; the Perpetuity key's SHA-256
// belongs in api_keys.key_hash and nowhere else, which the database check
// tells apart (hashOK).
func (c canaries) needles() []needle {
	var out []needle
	out = append(out, needlesFor("provider key (Bearer)", c.openai, len("sk-canary-"))...)
	out = append(out, needlesFor("provider key (x-api-key)", c.anthropic, len("sk-ant-canary-"))...)
	out = append(out, needlesFor("fake Perpetuity key", c.fake, len("ppk_canaryFAKE"))...)
	if c.ppk != "" {
		out = append(out, needlesFor("Perpetuity key", c.ppk, len(store.ShortPrefix(c.ppk)))...)
	}
	for _, k := range []string{c.openai, c.anthropic, c.fake} {
		s := sha256.Sum256([]byte(k))
		out = append(out, needle{"hash of a key never stored", s[:]}, needle{"hash of a key never stored", []byte(hex.EncodeToString(s[:]))})
	}
	return out
}

// hits counts every needle's occurrences in hay and names what was found.
func hits(hay []byte, ns []needle) (int, []string) {
	n := 0
	var found []string
	for _, nd := range ns {
		if c := bytes.Count(hay, nd.value); c > 0 {
			n += c
			found = append(found, nd.secret)
		}
	}
	return n, dedupe(found)
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// excerpt shows where a needle sits in hay, for the failure message.
func excerpt(hay []byte, ns []needle) string {
	for _, nd := range ns {
		if i := bytes.Index(hay, nd.value); i >= 0 {
			lo, hi := max(0, i-160), min(len(hay), i+len(nd.value)+160)
			return strings.ToValidUTF8(string(hay[lo:hi]), "?")
		}
	}
	return ""
}
