package proxy

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// TestReplyCapturePanics: a panic in the reply's capture, on a goroutine
// of its own after the response went out (Echo's recovery covers only the
// request's), is logged with its request id, not the process's end: the
// request is still recorded, and the proxy serves the next one. (The live
// question's capture panicking is memory.TestFrameBesideCapturePanics.)
func TestReplyCapturePanics(t *testing.T) {
	t.Parallel()
	tp := newTestProxy(t)
	// slog's handler writes under its own lock; the test reads after
	// Drain (tp.settle), which waits for the goroutines that log.
	var logs bytes.Buffer
	tp.px.log = slog.New(slog.NewTextHandler(&logs, nil))
	tp.mem.panicRole = "assistant"
	r := userRoutes[0]
	for _, q := range []string{"one", "two"} {
		status, _, body := tp.post(r.path, r.body(q), r.header)
		if status != http.StatusOK {
			t.Fatalf("%q: status %d: %s", q, status, body)
		}
	}
	tp.settle(2) // both recorded, after their reply captures panicked
	if got := len(tp.received()[r.provider]); got != 2 {
		t.Fatalf("%d requests forwarded, want 2", got)
	}
	if n := strings.Count(logs.String(), "reply capture panicked"); n != 2 || !strings.Contains(logs.String(), "request_id=") {
		t.Fatalf("want two panics logged with their request ids, logged:\n%s", logs.String())
	}
	for _, m := range tp.mem.Stored() {
		if m.Role == "assistant" {
			t.Fatalf("a reply stored though its capture panicked: %+v", m)
		}
	}
}
