package app

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckUserFlag(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, user, want string
	}{
		{"empty is the key's user", "", ""},
		{"a plain name", "caroline", ""},
		{"UTF-8 beyond ASCII", "zoë 山田", ""},
		{"a NUL", "car\x00oline", "NUL character"},
		{"not UTF-8", "car\xffoline", "not valid UTF-8"},
		{"too long", strings.Repeat("x", 201), "longer than 200 bytes"},
	} {
		err := checkUserFlag("--user", c.user)
		var ue UsageError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (!errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--user")):
			t.Errorf("%s: %v, want a usage error naming --user and %q", c.name, err, c.want)
		}
	}
}
