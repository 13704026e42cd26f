package web

import (
	"strings"
	"testing"
	"time"
)

func TestDeviceCookieVouches(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	const key, ttl = "$argon2id$v=19$m=1024,t=1,p=1$c2FsdA$aGFzaA", 90 * 24 * time.Hour
	_, v, err := newDevice(42, key, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != deviceLen {
		t.Fatalf("cookie of %d characters, want %d", len(v), deviceLen)
	}
	d, ok := parseDevice(v)
	if !ok {
		t.Fatal("a fresh cookie does not parse")
	}
	flip := []byte(v)
	flip[len(flip)-5] ^= 1
	if flip[len(flip)-5] == '-' || flip[len(flip)-5] == '_' {
		flip[len(flip)-5] = 'A'
	}
	tampered, _ := parseDevice(string(flip))
	cases := []struct {
		name    string
		d       device
		account int64
		key     string
		at      time.Time
		want    bool
	}{
		{"as issued", d, 42, key, now, true},
		{"a day later", d, 42, key, now.Add(24 * time.Hour), true},
		{"another account", d, 43, key, now, false},
		{"another password hash", d, 42, key + "x", now, false},
		{"after its trust ends", d, 42, key, now.Add(ttl), false},
		{"issued in the future", d, 42, key, now.Add(-time.Hour), false},
		{"tampered", tampered, 42, key, now, false},
	}
	for _, c := range cases {
		if got := c.d.vouches(c.account, c.key, c.at, ttl); got != c.want {
			t.Errorf("%s: vouches = %v, want %v", c.name, got, c.want)
		}
	}
	_, w, _ := newDevice(42, key, now)
	e, _ := parseDevice(w)
	if e.nonceHex() == d.nonceHex() {
		t.Error("two sign-ins gave the same device scope")
	}
}

// FuzzParseDevice: any cookie value parses or not without panicking, and
// what parses re-encodes to itself (one value per device, no malleability).
func FuzzParseDevice(f *testing.F) {
	_, v, err := newDevice(7, "key", time.Unix(1_800_000_000, 0))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{v, "", "not.a.cookie", strings.Repeat("A", deviceLen), strings.Repeat("_", deviceLen+1), v[:len(v)-1] + "B"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := parseDevice(s)
		if !ok {
			return
		}
		if d.vouches(d.account, "another key", d.issued, time.Hour) {
			t.Fatalf("%q vouches under a key it was not made with", s)
		}
		if got := encodeDevice(d); got != s {
			t.Fatalf("%q parses and re-encodes as %q", s, got)
		}
	})
}
