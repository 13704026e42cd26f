package guard

import (
	"errors"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	t.Parallel()
	plain := errors.New("plain failure")
	for _, tc := range []struct {
		name     string
		f        func() error
		want     error  // errors.Is, when not a panic
		panicked string // the Panic's What
		hidden   string // must not appear in the error text
	}{
		{name: "returns nil", f: func() error { return nil }},
		{name: "returns an error", f: func() error { return plain }, want: plain},
		{name: "runtime error", f: func() error {
			var s []int
			_ = s[3]
			return nil
		}, panicked: "runtime error: index out of range [3] with length 0"},
		{name: "nil map", f: func() error {
			var m map[string]int
			m["x"] = 1
			return nil
		}, panicked: "assignment to entry in nil map"},
		{name: "a value that may hold a secret", f: func() error {
			panic("provider key sk-live-0123456789abcdef")
		}, panicked: "value of type string", hidden: "sk-live"},
		{name: "an error value", f: func() error {
			panic(errors.New("ppk_secretsecret leaked"))
		}, panicked: "value of type *errors.errorString", hidden: "ppk_"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := Run(tc.f)
			var p *Panic
			if tc.panicked == "" {
				if errors.As(err, &p) {
					t.Fatalf("no panic, got %v", err)
				}
				if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
					t.Fatalf("got %v, want %v", err, tc.want)
				}
				return
			}
			if !errors.As(err, &p) {
				t.Fatalf("got %v, want a *Panic", err)
			}
			if p.What != tc.panicked {
				t.Errorf("What = %q, want %q", p.What, tc.panicked)
			}
			if !strings.Contains(string(p.Stack), "guard.TestRun") {
				t.Errorf("the stack does not show where it panicked:\n%s", p.Stack)
			}
			if tc.hidden != "" && strings.Contains(err.Error(), tc.hidden) {
				t.Errorf("the error carries the panic's value: %s", err)
			}
		})
	}
}
