// Package streams is issue 9 item 10: hundreds of concurrent SSE streams
// that last minutes. Every stream must end with its proper terminator and
// its full content, every question and reply must be stored (not flagged),
// and no server timeout may cut a stream short: app/serve.go sets no
// WriteTimeout and the relay clears the write deadline per stream, so a
// stream lasts as long as the provider talks.
package streams

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
	"github.com/perpetuity/perpetuity/e2e/reliability/internal/harness"
)

// stream is one long request and what its client saw.
type stream struct {
	tag     int
	dialect harness.Dialect
	status  int
	tr      harness.Transcript
	elapsed time.Duration
	maxGap  time.Duration // longest wait between two events at the client
	err     error
}

func TestLongStreams(t *testing.T) {
	t.Parallel()
	n := figure.N(300, 20)
	length := time.Duration(figure.N(180, 5)) * time.Second // how long each stream lasts
	every := time.Duration(figure.N(1000, 100)) * time.Millisecond
	chunks := int(length / every)
	s := harness.Start(t)
	s.Fake.SetDefault(func(r fakeprovider.Recorded) fakeprovider.Reply {
		tag, _ := harness.TagOf(r.Body)
		return fakeprovider.Reply{Text: harness.Words(tag, chunks), Chunks: chunks, ChunkDelay: every}
	})

	streams := make([]*stream, n)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}} // no client timeout: the streams decide
	var wg sync.WaitGroup
	for i := range streams {
		st := &stream{tag: i + 1, dialect: harness.Dialects[i%2]}
		streams[i] = st
		wg.Go(func() { st.run(s, client) })
	}
	wg.Wait()

	// Captures run after each response ends; a few hundred land at once.
	turns := s.WaitStored(t, 2*n, 60*time.Second)
	var truncated, lost, shortLived int
	var minDur, maxDur, maxGap time.Duration
	var problems []string
	for i, st := range streams {
		bad := func(format string, args ...any) {
			problems = append(problems, fmt.Sprintf("#%d %s: ", st.tag, st.dialect.Name)+fmt.Sprintf(format, args...))
		}
		want := harness.Words(st.tag, chunks)
		switch {
		case st.err != nil || st.status != http.StatusOK:
			truncated++
			bad("request failed: status %d, %v", st.status, st.err)
		case st.tr.End != nil || st.tr.Errors > 0 || !st.tr.Stopped || !st.tr.Terminal || st.tr.Text != want:
			truncated++
			bad("stream not whole: end %v, %d error events, stop %v, terminator %v, %d/%d bytes of content",
				st.tr.End, st.tr.Errors, st.tr.Stopped, st.tr.Terminal, len(st.tr.Text), len(want))
		}
		if st.elapsed < length {
			shortLived++
			bad("lasted %v, less than the provider's %v", st.elapsed, length)
		}
		if i == 0 || st.elapsed < minDur {
			minDur = st.elapsed
		}
		maxDur, maxGap = max(maxDur, st.elapsed), max(maxGap, st.maxGap)
		tr := turns[st.tag]
		switch {
		case tr == nil || tr.User == nil || tr.User.Interrupted || tr.User.Text != harness.Question(st.tag, question):
			lost++
			bad("question not stored intact: %+v", tr)
		case tr.Assistant == nil || tr.Assistant.Interrupted || tr.Assistant.Text != want:
			lost++
			bad("reply not stored whole and unflagged: %+v", tr.Assistant)
		case tr.Extra > 0:
			lost++
			bad("%d extra messages stored", tr.Extra)
		}
	}

	figure.Record(t, figure.Figure{
		Item: 10, Name: "Long concurrent streams",
		Figure: fmt.Sprintf("%d concurrent streams of %v each (lasted %.1f..%.1f s): truncated %d, lost captures %d, cut short %d; longest gap between two events at a client %s (provider pace %v)",
			n, length, minDur.Seconds(), maxDur.Seconds(), truncated, lost, shortLived, harness.Ms(maxGap), every),
		Target: "0 truncated, 0 lost captures, every stream lasts as long as its provider talks",
		Pass:   truncated == 0 && lost == 0 && shortLived == 0,
		Details: fmt.Sprintf("The real binary with a fake provider that streams %d content deltas %v apart (%v of content) to each request; %d clients (half OpenAI chat, "+
			"half Anthropic messages) open their streams at once over raw HTTP with no client timeout. A stream is whole when it has every content delta in order, "+
			"its stop reason and its terminator ([DONE] / message_stop), and no error event. Each question and reply is then read back from the database: both "+
			"stored once, the reply whole and not flagged interrupted. The server sets ReadHeaderTimeout 10s, IdleTimeout 120s and no WriteTimeout "+
			"(app/serve.go), and the relay clears the write deadline per stream (proxy/relay.go); the full form's streams outlast the idle timeout.",
			chunks, every, length, n),
	})
	for i, p := range problems {
		if i == 20 {
			t.Errorf("... and %d more", len(problems)-20)
			break
		}
		t.Error(p)
	}
}

const question = "talk to me for a long while"

func (st *stream) run(s *harness.Server, client *http.Client) {
	req := s.Request(context.Background(), st.dialect, harness.Question(st.tag, question), true)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		st.err = err
		return
	}
	defer resp.Body.Close()
	st.status = resp.StatusCode
	last := time.Now()
	st.tr = harness.ReadStream(st.dialect, resp.Body, func(*harness.Transcript) bool {
		now := time.Now()
		st.maxGap = max(st.maxGap, now.Sub(last))
		last = now
		return true
	})
	st.elapsed = time.Since(start)
}
