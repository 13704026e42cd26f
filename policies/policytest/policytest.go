// Package policytest holds the console's expected authorization matrix for
// the tests that check the policy against it.
package policytest

import (
	_ "embed"
	"fmt"
	"strings"
)

// Level is the least role a console route needs.
type Level int

const (
	Public Level = iota
	Member
	Admin
	Platform
)

//go:embed console_access.txt
var consoleAccess string

// ConsoleAccess is the matrix of console_access.txt: "METHOD /path" to the
// least level that may use it.
func ConsoleAccess() (map[string]Level, error) {
	levels := map[string]Level{"public": Public, "member": Member, "admin": Admin, "platform": Platform}
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
