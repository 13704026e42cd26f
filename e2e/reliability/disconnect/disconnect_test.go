// Package disconnect is issue 9 item 3: clients that hang up mid-stream,
// many times, in both dialects, at random points of the reply. Each time the
// incoming turn must be stored, the partial reply stored and flagged
// interrupted, and the upstream call closed within a second of the client
// leaving (the fake provider records when its request context ended).
package disconnect

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
	"github.com/perpetuity/perpetuity/e2e/reliability/internal/harness"
)

const (
	replyWords = 40                    // content deltas of every reply, plus the tag
	chunkDelay = 15 * time.Millisecond // the fake's pace between events
	maxClose   = time.Second           // upstream must be closed this soon after the client leaves
	workers    = 8                     // hang-ups in flight at once
)

// hangUp is one client that left mid-stream.
type hangUp struct {
	tag     int
	dialect harness.Dialect
	cut     int  // content deltas read before hanging up
	reset   bool // RST (SO_LINGER 0) instead of FIN
	seen    string
	left    time.Time
	err     error
}

func TestClientDisconnects(t *testing.T) {
	t.Parallel()
	s := harness.Start(t)
	s.Fake.SetDefault(func(r fakeprovider.Recorded) fakeprovider.Reply {
		n, _ := harness.TagOf(r.Body)
		return fakeprovider.Reply{Text: harness.Words(n, replyWords), ChunkDelay: chunkDelay}
	})
	total := figure.N(200, 10)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 9))

	// Plan every hang-up up front (the generator is not shared by workers).
	// The cut leaves at least three events unsent, so the provider is still
	// talking when the client goes.
	hs := make([]*hangUp, total)
	for i := range hs {
		hs[i] = &hangUp{tag: i + 1, dialect: harness.Dialects[i%2], cut: 1 + rng.IntN(replyWords-3), reset: rng.IntN(2) == 0}
	}
	jobs := make(chan *hangUp)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for h := range jobs {
				h.run(s)
			}
		})
	}
	for _, h := range hs {
		jobs <- h
	}
	close(jobs)
	wg.Wait()
	for _, h := range hs {
		if h.err != nil {
			t.Fatalf("hang-up %d (%s): %v", h.tag, h.dialect.Name, h.err)
		}
	}

	// The provider side: every call must end cancelled, soon after its client left.
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.Fake.WaitClosed(wctx, total)
	calls := map[int]fakeprovider.Recorded{}
	for _, r := range s.Fake.Requests() {
		if n, ok := harness.TagOf(r.Body); ok {
			if _, dup := calls[n]; dup {
				t.Errorf("request %d reached the provider twice", n)
			}
			calls[n] = r
		}
	}
	turns := s.WaitStored(t, 2*total, 20*time.Second)

	var stored, flagged, closed int
	var delays []time.Duration
	var problems []string
	for _, h := range hs {
		bad := func(format string, args ...any) {
			problems = append(problems, fmt.Sprintf("#%d %s cut after %d deltas (reset %v): ", h.tag, h.dialect.Name, h.cut, h.reset)+fmt.Sprintf(format, args...))
		}
		tr := turns[h.tag]
		switch {
		case tr == nil || tr.User == nil:
			bad("incoming turn not stored")
		case tr.User.Text != harness.Question(h.tag, story) || tr.User.Interrupted:
			bad("incoming turn stored as %+v", *tr.User)
		default:
			stored++
		}
		full := harness.Words(h.tag, replyWords)
		switch {
		case tr == nil || tr.Assistant == nil:
			bad("partial reply not stored (client saw %q)", h.seen)
		case !tr.Assistant.Interrupted:
			bad("partial reply stored without the interrupted flag: %q", tr.Assistant.Text)
		case !strings.HasPrefix(full, tr.Assistant.Text) || !strings.HasPrefix(tr.Assistant.Text, h.seen):
			bad("partial reply stored as %q; client saw %q", tr.Assistant.Text, h.seen)
		default:
			flagged++
		}
		if tr != nil && tr.Extra > 0 {
			bad("%d extra messages stored", tr.Extra)
		}
		call, ok := calls[h.tag]
		switch {
		case !ok:
			bad("never reached the provider")
		case !call.Canceled:
			bad("upstream call not cancelled (finished %v after the client left)", call.Finished.Sub(h.left))
		default:
			d := max(call.CanceledAt.Sub(h.left), 0)
			delays = append(delays, d)
			if d <= maxClose {
				closed++
			} else {
				bad("upstream closed %v after the client left", d)
			}
		}
	}

	p99, worst := harness.Percentile(delays, 99), harness.Percentile(delays, 100)
	pass := stored == total && flagged == total && closed == total
	figure.Record(t, figure.Figure{
		Item: 3, Name: "Client disconnects mid-stream",
		Figure: fmt.Sprintf("%d hang-ups (half OpenAI, half Anthropic): turn stored %d/%d, partial reply stored flagged %d/%d, upstream closed within 1 s %d/%d; upstream-close delay p99 %s, max %s",
			total, stored, total, flagged, total, closed, total, harness.Ms(p99), harness.Ms(worst)),
		Target: "every turn stored, every partial reply stored flagged interrupted, upstream closed within 1 s of the client leaving",
		Pass:   pass,
		Details: fmt.Sprintf("The real binary on a fresh database; the fake provider streams a %d-word reply, one word per event, %v apart. "+
			"%d clients (%d at a time, alternating OpenAI chat and Anthropic messages, raw HTTP over TCP) each read a random number of content deltas (1..%d, seed %d) "+
			"and close the socket, half with FIN and half with RST. The close delay is from the client's close to the moment the fake provider's request context ended. "+
			"The stored partial reply must be a prefix of the full reply and hold at least what the client had seen.",
			replyWords+1, chunkDelay, total, workers, replyWords-3, seed),
	})
	for i, p := range problems {
		if i == 20 {
			t.Errorf("... and %d more", len(problems)-20)
			break
		}
		t.Error(p)
	}
}

const story = "tell me a long story"

// run sends the request over its own TCP connection, reads h.cut content
// deltas and hangs up.
func (h *hangUp) run(s *harness.Server) {
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		h.err = err
		return
	}
	defer conn.Close()
	req := s.Request(context.Background(), h.dialect, harness.Question(h.tag, story), true)
	if err := req.Write(conn); err != nil {
		h.err = err
		return
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		h.err = err
		return
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		h.err = fmt.Errorf("status %d: %s", resp.StatusCode, b)
		return
	}
	tr := harness.ReadStream(h.dialect, resp.Body, func(tr *harness.Transcript) bool { return tr.Deltas < h.cut })
	if tr.Deltas < h.cut {
		h.err = fmt.Errorf("stream ended after %d deltas (%v), before the cut at %d", tr.Deltas, tr.End, h.cut)
		return
	}
	h.seen = tr.Text
	if h.reset {
		_ = conn.(*net.TCPConn).SetLinger(0)
	}
	h.left = time.Now()
	_ = conn.Close()
}
