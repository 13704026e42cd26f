package store

import "fmt"

// KeyScope is how far a key reaches within its tenant.
type KeyScope string

const (
	// ScopeUser pins a key to its memory user: requests may only repeat
	// that user (X-Perpetuity-User, import lines). New keys get it unless
	// an admin chooses otherwise.
	ScopeUser KeyScope = "user"
	// ScopeTenant lets a key name any memory user of its tenant: a harness
	// that serves several people with one key. Keys from before migration
	// 000009 have it.
	ScopeTenant KeyScope = "tenant"
)

// ParseKeyScope reads a scope as the CLI and console take it; "pinned" and
// "tenant-wide" are accepted as the words the console shows.
func ParseKeyScope(s string) (KeyScope, error) {
	switch s {
	case "user", "pinned":
		return ScopeUser, nil
	case "tenant", "tenant-wide":
		return ScopeTenant, nil
	}
	return "", fmt.Errorf("key scope %q: use user (pinned to its memory user) or tenant (any memory user of the tenant)", s)
}

// Pinned reports whether the key may act only as its own memory user. A
// scope it does not know (the zero value included) counts as pinned, so
// a mistake narrows a key rather than widening it.
func (k KeyIdentity) Pinned() bool { return k.Scope != ScopeTenant }

// Label is the scope as the console and CLI print it.
func (s KeyScope) Label() string {
	if s == ScopeTenant {
		return "tenant-wide"
	}
	return "pinned"
}

func (s KeyScope) check() error {
	if s != ScopeUser && s != ScopeTenant {
		return fmt.Errorf("key scope %q: want %q or %q", string(s), ScopeUser, ScopeTenant)
	}
	return nil
}
