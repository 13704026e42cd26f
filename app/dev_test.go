package app

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDevCommand is `make run`: it creates the demo tenant once, prints its
// URLs and key, serves, and a second start prints the same key again.
func TestDevCommand(t *testing.T) {
	t.Parallel()
	vars := map[string]string{
		"DATABASE_URL":        dbtest.New(t),
		"PERPETUITY_ADDR":     "127.0.0.1:0",
		"PERPETUITY_DATA_DIR": t.TempDir(),
	}
	start := func() string {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var out, errs syncBuffer
		e := env{getenv: func(k string) string { return vars[k] }, stdout: &out, stderr: &errs}
		done := make(chan error, 1)
		go func() { done <- run(ctx, e, []string{"dev"}) }()
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(errs.String(), "perpetuity serving") {
			if time.Now().After(deadline) {
				t.Fatalf("dev did not start:\n%s\n%s", out.String(), errs.String())
			}
			select {
			case err := <-done:
				t.Fatalf("dev ended: %v\n%s", err, errs.String())
			case <-time.After(20 * time.Millisecond):
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("dev shutdown: %v", err)
		}
		return out.String()
	}
	first := start()
	for _, want := range []string{"API key", "/k/ppk_", "/v1", "Console:"} {
		if !strings.Contains(first, want) {
			t.Fatalf("dev output lacks %q:\n%s", want, first)
		}
	}
	if second := start(); second != first {
		t.Fatalf("a second start printed another tenant:\n%s\n---\n%s", first, second)
	}
}
