// Package policytest holds the console's expected authorization matrix for
// the tests that check the policy against it.
package policytest

import (
	_ "embed"
	"fmt"
	"strings"
)

// Level is who may use a console route, and, for a principal, the role it
// holds. The tenant roles are not a ladder: a member manages keys and sees
// usage but reads no memory content, a reader reads content but changes
// nothing; an admin may do both. Allows decides.
type Level int

const (
	Public   Level = iota // a route anyone may use; a principal signed out
	Member                // keys and usage (members and admins); tenant_member
	Reader                // memory content (readers and admins); tenant_reader
	Admin                 // tenant_admin
	Platform              // platform_admin
	Signed                // a route every signed-in role may use (never a principal)
)

// Allows reports whether a principal holding role may use a route that
// needs need.
func Allows(need, role Level) bool {
	switch need {
	case Public:
		return true
	case Signed:
		return role != Public
	case Member, Reader:
		return role == need || role == Admin || role == Platform
	case Admin:
		return role == Admin || role == Platform
	case Platform:
		return role == Platform
	}
	return false
}

//go:embed console_access.txt
var consoleAccess string

// ConsoleAccess is the matrix of console_access.txt: "METHOD /path" to the
// least level that may use it.
func ConsoleAccess() (map[string]Level, error) {
	levels := map[string]Level{"public": Public, "signed": Signed, "member": Member, "reader": Reader, "admin": Admin, "platform": Platform}
	out := map[string]Level{}
	for i, line := range strings.Split(consoleAccess, "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		route, name, ok := strings.Cut(line, "\t")
		l, known := levels[strings.TrimSpace(name)]
		if !ok || !known {
			return nil, fmt.Errorf("console_access.txt line %d: want \"METHOD /path<TAB>level\", got %q", i+1, line)
		}
		if _, dup := out[route]; dup {
			return nil, fmt.Errorf("console_access.txt line %d: %s listed twice", i+1, route)
		}
		out[route] = l
	}
	return out, nil
}
