package app

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

// TestBodyBudgetTakeGive: concurrent takers never hold more than the
// budget between them, and everything taken is given back.
func TestBodyBudgetTakeGive(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		max  int64
	}{{"bounded", 1000}, {"unlimited", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := &bodyBudget{max: tc.max}
			var wg sync.WaitGroup
			var mu sync.Mutex
			held, peak, refused := int64(0), int64(0), 0
			for range 8 {
				wg.Go(func() {
					for range 500 {
						if !b.take(300) {
							mu.Lock()
							refused++
							mu.Unlock()
							continue
						}
						mu.Lock()
						held += 300
						peak = max(peak, held)
						mu.Unlock()
						time.Sleep(time.Microsecond) // others take meanwhile
						mu.Lock()
						held -= 300
						mu.Unlock()
						b.give(300)
					}
				})
			}
			wg.Wait()
			if b.used.Load() != 0 {
				t.Errorf("%d bytes still counted after every give", b.used.Load())
			}
			if tc.max > 0 && peak > tc.max {
				t.Errorf("held %d bytes at once, budget %d", peak, tc.max)
			}
			if tc.max == 0 && refused > 0 {
				t.Errorf("an unlimited budget refused %d takes", refused)
			}
		})
	}
}

// TestBodyBudgetRefusesPastIt: through the service's router, a body that
// would take the process past its body budget while another request holds
// most of it is refused with a 503 to retry (its connection closed), the
// held request is unharmed, and once it ends its bytes are given back, so
// the same body is taken in.
func TestBodyBudgetRefusesPastIt(t *testing.T) {
	t.Parallel()
	ec := NewRouter(slog.New(slog.DiscardHandler))
	hold := make(chan struct{})
	ec.POST("/hold", func(c echo.Context) error {
		if _, err := io.ReadAll(c.Request().Body); err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, "could not read the body")
		}
		<-hold
		return c.NoContent(http.StatusNoContent)
	})
	readAllRoute(ec, "/read")
	budget := &bodyBudget{max: 10 << 10}
	host := serveBodies(t, bodyDeadline{next: ec, timeout: 10 * time.Second, maxBytes: 1 << 20, budget: budget})
	send := func(path string, n int) (*http.Response, error) {
		resp, err := http.Post("http://"+host+path, "application/octet-stream", bytes.NewReader(bytes.Repeat([]byte("a"), n)))
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp, nil
	}
	post := func(path string, n int) *http.Response {
		t.Helper()
		resp, err := send(path, n)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	type result struct {
		resp *http.Response
		err  error
	}
	held := make(chan result, 1)
	go func() {
		resp, err := send("/hold", 8<<10)
		held <- result{resp, err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for budget.used.Load() != 8<<10 {
		if time.Now().After(deadline) {
			t.Fatalf("the held body counts %d bytes, want %d", budget.used.Load(), 8<<10)
		}
		time.Sleep(5 * time.Millisecond)
	}
	resp := post("/read", 4<<10)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !resp.Close {
		t.Errorf("past the budget: status %d, Retry-After %q, close %v; want 503, 1, closed", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Close)
	}
	if got := budget.used.Load(); got != 8<<10 {
		t.Errorf("after the refusal %d bytes counted, want the held body's %d", got, 8<<10)
	}
	close(hold)
	if r := <-held; r.err != nil || r.resp.StatusCode != http.StatusNoContent {
		t.Fatalf("the held request: %+v", r)
	}
	for budget.used.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still counted after every request ended", budget.used.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if resp := post("/read", 8<<10); resp.StatusCode != http.StatusNoContent {
		t.Errorf("within the budget again: status %d", resp.StatusCode)
	}
	if !strings.Contains(errBodyBudget{}.Error(), "retry") {
		t.Errorf("the refusal does not say to retry: %q", errBodyBudget{}.Error())
	}
}

// TestBodyBudgetRefusalCloses: a refused body that stalls short of its end
// is not waited for. net/http reads what is left of an unread body under
// 256 KiB before it closes the connection, until the read deadline; the
// refusal ends reading at once.
func TestBodyBudgetRefusalCloses(t *testing.T) {
	t.Parallel()
	ec := NewRouter(slog.New(slog.DiscardHandler))
	readAllRoute(ec, "/read")
	const timeout = 20 * time.Second
	budget := &bodyBudget{max: 10 << 10}
	budget.take(8 << 10) // another request's body
	host := serveBodies(t, bodyDeadline{next: ec, timeout: timeout, maxBytes: 1 << 20, budget: budget})
	// 8 KiB declared, 4 KiB sent: past the budget, and the rest never comes.
	raw, took := rawPost(t, host, "/read", 8<<10, bytes.Repeat([]byte("a"), 4<<10), 4<<10, 0)
	if !strings.HasPrefix(raw, "HTTP/1.1 503") {
		t.Fatalf("answer %q, want a 503", raw)
	}
	if took > timeout/4 {
		t.Errorf("the connection was closed %v after the refusal, want well within the body deadline %v", took, timeout)
	}
	if got := budget.used.Load(); got != 8<<10 {
		t.Errorf("%d bytes counted after the refusal, want the other body's %d", got, 8<<10)
	}
}

// TestBodyBudgetRefusalLetsASenderFinish: a client still sending the rest
// of a refused body (under 256 KiB, which net/http reads before it closes)
// finishes and reads its 503; closing on it would reset the connection
// first.
func TestBodyBudgetRefusalLetsASenderFinish(t *testing.T) {
	t.Parallel()
	ec := NewRouter(slog.New(slog.DiscardHandler))
	readAllRoute(ec, "/read")
	host := serveBodies(t, bodyDeadline{next: ec, timeout: 20 * time.Second, maxBytes: 1 << 20, budget: &bodyBudget{max: 64 << 10}})
	const size = 200 << 10
	raw, _, err := rawSend(t, host, "/read", size, bytes.Repeat([]byte("a"), size), 8<<10, 2*time.Millisecond)
	if err != nil {
		t.Fatalf("sending the refused body: %v", err)
	}
	if !strings.HasPrefix(raw, "HTTP/1.1 503") {
		t.Fatalf("answer %q, want a 503", raw)
	}
}

// TestBodyBudgetRefusalAtTheEnd: a body refused by the read that reached
// its end leaves the request's context alone (net/http watches the
// connection for a hang-up from then, and an expired read deadline would
// read as one).
func TestBodyBudgetRefusalAtTheEnd(t *testing.T) {
	t.Parallel()
	ec := NewRouter(slog.New(slog.DiscardHandler))
	ctxErr := make(chan error, 1)
	ec.POST("/read", func(c echo.Context) error {
		_, err := io.ReadAll(c.Request().Body)
		time.Sleep(50 * time.Millisecond)
		ctxErr <- c.Request().Context().Err()
		if err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, "could not read the body")
		}
		return c.NoContent(http.StatusNoContent)
	})
	budget := &bodyBudget{max: 10 << 10}
	budget.take(10<<10 - 100)
	host := serveBodies(t, bodyDeadline{next: ec, timeout: 20 * time.Second, maxBytes: 1 << 20, budget: budget})
	resp, err := http.Post("http://"+host+"/read", "text/plain", bytes.NewReader(bytes.Repeat([]byte("a"), 300)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("status %d, want 503", resp.StatusCode)
	}
	if err := <-ctxErr; err != nil {
		t.Errorf("the request's context after its refusal: %v", err)
	}
}

// readAllRoute adds a POST route that reads its whole body, as the
// service's handlers do, and answers 400 when the read fails: the
// middleware under test turns that into its own status.
func readAllRoute(ec *echo.Echo, path string) {
	ec.POST(path, func(c echo.Context) error {
		if _, err := io.ReadAll(c.Request().Body); err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, "could not read the body")
		}
		return c.NoContent(http.StatusNoContent)
	})
}
