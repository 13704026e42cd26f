// Package drain is issue 21 item 4 on one replica: a `perpetuity serve`
// told to stop (SIGTERM, as an orchestrator's rolling restart does) leaves
// the balancer's rotation first (/readyz 503 at once), finishes the
// streams it holds up to PERPETUITY_DRAIN_TIMEOUT, and cuts the rest with
// the dialect's error event, never a clean-looking end, storing the part
// produced flagged interrupted.
package drain

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/e2e/reliability/internal/harness"
)

const (
	drainTimeout = 4 * time.Second
	readyDelay   = 1500 * time.Millisecond
	story        = "tell me a long story"
)

// stream is one client's streamed request across the stop.
type stream struct {
	tag     int
	dialect harness.Dialect
	words   int
	pace    time.Duration // between the fake's events
	cut     bool          // longer than the drain: must be cut

	started chan struct{} // closed at the first content delta
	deltaAt []time.Time   // when each content delta arrived
	tr      harness.Transcript
	ended   time.Time
	err     error
}

func (s *stream) length() time.Duration { return time.Duration(s.words) * s.pace }

func TestDrainOnStop(t *testing.T) {
	t.Parallel()
	srv := harness.Start(t, "PERPETUITY_DRAIN_TIMEOUT="+drainTimeout.String(), "PERPETUITY_DRAIN_READY_DELAY="+readyDelay.String())
	// Short streams end well inside the drain time, long ones well past it
	// (both under the fake's 64-delta cap, so one delta is one word).
	streams := []*stream{
		{tag: 1, dialect: harness.OpenAI, words: 30, pace: 50 * time.Millisecond},
		{tag: 2, dialect: harness.Anthropic, words: 30, pace: 50 * time.Millisecond},
		{tag: 3, dialect: harness.OpenAI, words: 60, pace: 150 * time.Millisecond, cut: true},
		{tag: 4, dialect: harness.Anthropic, words: 60, pace: 150 * time.Millisecond, cut: true},
	}
	byTag := map[int]*stream{}
	for _, s := range streams {
		s.started = make(chan struct{})
		byTag[s.tag] = s
	}
	srv.Fake.SetDefault(func(r fakeprovider.Recorded) fakeprovider.Reply {
		n, _ := harness.TagOf(r.Body)
		s := byTag[n]
		if s == nil {
			return fakeprovider.Reply{Text: "untagged"}
		}
		return fakeprovider.Reply{Text: harness.Words(n, s.words), ChunkDelay: s.pace}
	})
	// Ready once its arenas are warm (a moment after it listens: "loading"
	// until then, by design).
	deadline := time.Now().Add(15 * time.Second)
	for code, body := readyz(t, srv.URL); code != http.StatusOK; code, body = readyz(t, srv.URL) {
		if time.Now().After(deadline) {
			t.Fatalf("/readyz %d before the stop: %s", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}

	var wg sync.WaitGroup
	for _, s := range streams {
		wg.Go(func() { s.run(srv) })
	}
	for _, s := range streams {
		select {
		case <-s.started:
		case <-time.After(30 * time.Second):
			wg.Wait()
			t.Fatalf("stream %d did not start: %v", s.tag, s.err)
		}
	}
	stop := time.Now()
	if err := srv.Proc.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// (3) Out of rotation at once, while the streams go on.
	var unready time.Time
	for deadline := stop.Add(readyDelay); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if code, _ := readyz(t, srv.URL); code == http.StatusServiceUnavailable {
			unready = time.Now()
			break
		}
	}
	if unready.IsZero() {
		t.Fatalf("/readyz never answered 503 within the ready delay (%v) after SIGTERM", readyDelay)
	}
	wg.Wait()
	select {
	case <-srv.Proc.Exited():
	case <-time.After(drainTimeout + 20*time.Second):
		t.Fatal("the server did not exit after its drain")
	}
	if err := srv.Proc.Cmd.Wait(); err != nil {
		t.Fatalf("the server's exit after a drain: %v", err)
	}
	t.Logf("/readyz 503 %v after SIGTERM", unready.Sub(stop).Round(time.Millisecond))

	// Every capture has run: the server waits for them before it exits.
	turns, _, err := srv.Turns(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range streams {
		t.Run(fmt.Sprintf("%s_%d_cut_%v", s.dialect.Name, s.tag, s.cut), func(t *testing.T) {
			if s.err != nil {
				t.Fatal(s.err)
			}
			full := harness.Words(s.tag, s.words)
			tr := turns[s.tag]
			if tr == nil || tr.User == nil || tr.Assistant == nil || tr.Extra > 0 {
				t.Fatalf("stored %+v, want the question and one reply", tr)
			}
			if s.deltaAt[len(s.deltaAt)-1].Before(unready) {
				t.Fatalf("no content after /readyz went 503: the stream did not continue through the drain")
			}
			if !s.cut {
				// (1) Shorter than the drain: finishes cleanly.
				if !s.tr.CleanLooking() || s.tr.Errors > 0 || s.tr.Text != full || s.tr.End != nil {
					t.Fatalf("stream %+v, want the whole reply and its terminator", s.tr)
				}
				if tr.Assistant.Text != full || tr.Assistant.Interrupted {
					t.Fatalf("stored reply %+v, want the whole reply, not interrupted", *tr.Assistant)
				}
				return
			}
			// (2) Longer: the dialect's error event, nothing clean after it,
			// at the drain deadline, and the part produced stored flagged.
			if s.tr.Errors != 1 || s.tr.Terminal || s.tr.Stopped || s.tr.CleanAfterError || s.tr.End != nil {
				t.Fatalf("stream %+v, want one error event and no terminator or stop, then the body's clean end", s.tr)
			}
			if at := s.ended.Sub(stop); at < drainTimeout-500*time.Millisecond || at > drainTimeout+3*time.Second {
				t.Fatalf("cut %v after SIGTERM, want about the drain time %v", at, drainTimeout)
			}
			if s.tr.Text == full || !strings.HasPrefix(full, s.tr.Text) {
				t.Fatalf("client saw %q", s.tr.Text)
			}
			if !tr.Assistant.Interrupted || !strings.HasPrefix(full, tr.Assistant.Text) || !strings.HasPrefix(tr.Assistant.Text, s.tr.Text) {
				t.Fatalf("stored reply %+v; client saw %q: want the part produced, flagged interrupted", *tr.Assistant, s.tr.Text)
			}
		})
	}

	// One line at the start of the drain, one at its end with the counts.
	var began, ended map[string]any
	for _, line := range strings.Split(srv.Proc.Log.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		switch rec["msg"] {
		case "perpetuity shutting down":
			began = rec
		case "perpetuity shut down":
			ended = rec
		}
	}
	if began == nil || began["in_flight"] != float64(len(streams)) || began["drain_timeout_s"] != drainTimeout.Seconds() {
		t.Errorf("drain start logged as %v, want in_flight %d and the drain time", began, len(streams))
	}
	if ended == nil || ended["finished"] != float64(2) || ended["cut"] != float64(2) {
		t.Errorf("drain end logged as %v, want 2 finished and 2 cut", ended)
	}
}

// run sends the streamed request and reads it to its end.
func (s *stream) run(srv *harness.Server) {
	defer func() {
		select {
		case <-s.started:
		default:
			close(s.started) // never started: the waiter reads s.err
		}
	}()
	req := srv.Request(context.Background(), s.dialect, harness.Question(s.tag, story), true)
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		s.err = err
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		s.err = fmt.Errorf("status %d: %s", resp.StatusCode, b)
		return
	}
	s.tr = harness.ReadStream(s.dialect, resp.Body, func(tr *harness.Transcript) bool {
		if tr.Deltas > len(s.deltaAt) {
			s.deltaAt = append(s.deltaAt, time.Now())
			if len(s.deltaAt) == 1 {
				close(s.started)
			}
		}
		return true
	})
	s.ended = time.Now()
	if len(s.deltaAt) == 0 {
		s.err = fmt.Errorf("no content: %+v", s.tr)
	}
}

// readyz asks /readyz on a connection of its own, as a balancer's health
// check does.
func readyz(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url + "/readyz")
	if err != nil {
		t.Fatalf("/readyz: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
