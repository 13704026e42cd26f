package app

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// testBodyTimeout is short so the tests are quick; the bounds checked
// against it are generous (a loaded machine), never performance targets.
const testBodyTimeout = 300 * time.Millisecond

func deadlineServer(t *testing.T, maxBytes int64, h http.Handler) string {
	t.Helper()
	return serveBodies(t, bodyDeadline{next: h, timeout: testBodyTimeout, maxBytes: maxBytes})
}

// serveBodies serves through bd and returns the server's host:port.
func serveBodies(t *testing.T, bd bodyDeadline) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(bd)
	srv.Config.ReadHeaderTimeout = 10 * time.Second
	srv.Start()
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// rawPost writes a POST's headers declaring n body bytes, then sends body
// (fewer bytes, or none) in pieces of piece bytes gap apart, and returns
// what came back and when the server closed the connection. The request
// asks for keep-alive: net/http skips discarding an unread body of a
// request that closes its connection anyway.
func rawPost(t *testing.T, host, path string, n int, body []byte, piece int, gap time.Duration) (string, time.Duration) {
	t.Helper()
	got, life, _ := rawSend(t, host, path, n, body, piece, gap)
	return got, life
}

// rawSend is rawPost that also says how sending the body ended: the first
// write that failed, or nil.
func rawSend(t *testing.T, host, path string, n int, body []byte, piece int, gap time.Duration) (string, time.Duration, error) {
	t.Helper()
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	start := time.Now()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", path, n)
	sent := make(chan error, 1)
	go func() {
		for off := 0; off < len(body); off += piece {
			time.Sleep(gap)
			if _, err := conn.Write(body[off:min(off+piece, len(body))]); err != nil {
				sent <- fmt.Errorf("after %d of %d bytes: %w", off, len(body), err)
				return
			}
		}
		sent <- nil
	}()
	b, _ := io.ReadAll(conn)
	life := time.Since(start)
	return string(b), life, <-sent
}

// TestAbsentBodyIsClosedAtDeadline: a handler that reads no body (net/http
// then waits to discard what the client declared) no longer holds the
// connection for as long as the client stays silent.
func TestAbsentBodyIsClosedAtDeadline(t *testing.T) {
	t.Parallel()
	host := deadlineServer(t, 1<<20, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	}))
	got, life := rawPost(t, host, "/", 100, nil, 0, 0)
	if !strings.HasPrefix(got, "HTTP/1.1 200") {
		t.Errorf("answer %q", got)
	}
	if life < testBodyTimeout-50*time.Millisecond || life > testBodyTimeout+3*time.Second {
		t.Errorf("connection closed after %v, want about %v", life, testBodyTimeout)
	}
}

// TestTrickledBodyTimesOut: the handler reading a trickle gets a timeout
// error that quotes no address, and the request is marked for a 408.
func TestTrickledBodyTimesOut(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var readErr error
	var marked bool
	host := deadlineServer(t, 1<<20, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		mu.Lock()
		readErr, marked = err, bodyTimedOut(r.Context())
		mu.Unlock()
		w.WriteHeader(http.StatusRequestTimeout)
	}))
	got, life := rawPost(t, host, "/", 1000, []byte(strings.Repeat("a", 999)), 1, 50*time.Millisecond)
	if !strings.HasPrefix(got, "HTTP/1.1 408") {
		t.Errorf("answer %q", got)
	}
	if life > testBodyTimeout+3*time.Second {
		t.Errorf("answered after %v", life)
	}
	mu.Lock()
	defer mu.Unlock()
	var bt errBodyTimeout
	if !errors.As(readErr, &bt) || !errors.Is(readErr, os.ErrDeadlineExceeded) || !marked {
		t.Errorf("handler read error %v (marked %v), want errBodyTimeout", readErr, marked)
	}
	if readErr != nil && strings.Contains(readErr.Error(), "127.0.0.1") {
		t.Errorf("read error %q quotes an address", readErr)
	}
}

// TestNothingAfterTheBodyIsLimited: once the body is in, a reply may take
// many deadlines (a stream, a slow provider) without the request being
// cancelled, and a client hanging up is still noticed.
func TestNothingAfterTheBodyIsLimited(t *testing.T) {
	t.Parallel()
	cancelled := make(chan time.Duration, 1)
	host := deadlineServer(t, 1<<20, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			t.Errorf("read body: %v", err)
			return
		}
		start := time.Now()
		if r.URL.Path == "/hangup" {
			select {
			case <-r.Context().Done():
				cancelled <- time.Since(start)
			case <-time.After(10 * time.Second):
				cancelled <- -1
			}
			return
		}
		rc := http.NewResponseController(w)
		for i := range 6 {
			if err := r.Context().Err(); err != nil {
				t.Errorf("request cancelled %v after its body: %v", time.Since(start), err)
				return
			}
			fmt.Fprintf(w, "chunk %d\n", i)
			_ = rc.Flush()
			time.Sleep(testBodyTimeout / 2)
		}
	}))
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
	got, err := io.ReadAll(conn)
	if !strings.Contains(string(got), "chunk 5") {
		t.Errorf("stream cut (%v): %q", err, got)
	}

	conn, err = net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST /hangup HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
	time.Sleep(2 * testBodyTimeout) // past the deadline the body had
	conn.Close()
	if d := <-cancelled; d < 0 {
		t.Error("a client hanging up after its body was not noticed")
	}
}

// TestSteadyUploadOutlivesTimeout: a body faster than the floor rate may
// take longer than PERPETUITY_BODY_TIMEOUT, declared or chunked.
func TestSteadyUploadOutlivesTimeout(t *testing.T) {
	t.Parallel()
	host := deadlineServer(t, 1<<20, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestTimeout)
			return
		}
		fmt.Fprintf(w, "got %d", len(b))
	}))
	const size, piece, gap = 160 << 10, 8 << 10, 25 * time.Millisecond // 320 KiB/s for 0.5 s
	body := []byte(strings.Repeat("u", size))
	for _, chunked := range []bool{false, true} {
		pr, pw := io.Pipe()
		go func() {
			for off := 0; off < size; off += piece {
				time.Sleep(gap)
				if _, err := pw.Write(body[off : off+piece]); err != nil {
					return
				}
			}
			pw.Close()
		}()
		req, err := http.NewRequest(http.MethodPost, "http://"+host+"/", pr)
		if err != nil {
			t.Fatal(err)
		}
		if !chunked {
			req.ContentLength = size
		}
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("chunked %v: %v", chunked, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != fmt.Sprintf("got %d", size) {
			t.Errorf("chunked %v: %d %q after %v", chunked, resp.StatusCode, b, time.Since(start))
		}
	}
}

// TestDeadlineIsCapped: what a body has received extends its deadline only
// up to what the largest accepted body takes at the floor rate.
func TestDeadlineIsCapped(t *testing.T) {
	t.Parallel()
	const maxBytes = 8 << 10 // the cap: the timeout plus 1/8 s
	host := deadlineServer(t, maxBytes, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusRequestTimeout)
	}))
	// 256 KiB at once would buy 4 s uncapped; then the client stalls.
	got, life := rawPost(t, host, "/", 512<<10, []byte(strings.Repeat("b", 256<<10)), 256<<10, 0)
	if !strings.HasPrefix(got, "HTTP/1.1 408") || life > 2500*time.Millisecond {
		t.Errorf("answer %.20q after %v, want a 408 near %v", got, life, testBodyTimeout+time.Second/8)
	}
}

// TestBodyTimeoutIsA408: through the service's router, a handler's own
// error for a body that missed its deadline becomes a 408 that closes the
// connection.
func TestBodyTimeoutIsA408(t *testing.T) {
	t.Parallel()
	ec := NewRouter(slog.New(slog.DiscardHandler))
	readAllRoute(ec, "/form")
	host := deadlineServer(t, 1<<20, ec)
	got, _ := rawPost(t, host, "/form", 100, []byte("a"), 1, 0)
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
	if err != nil {
		t.Fatalf("answer %q: %v", got, err)
	}
	if resp.StatusCode != http.StatusRequestTimeout || !resp.Close {
		t.Errorf("status %d, close %v; want 408 and the connection closed", resp.StatusCode, resp.Close)
	}
}
