package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/perpetuity/perpetuity/proxy"
)

// Endpoint is one side of a comparison: where a request goes and with which
// headers. The baseline and the subject get the same body.
type Endpoint struct {
	URL    string
	Header http.Header
}

// Timing is what the client saw of one request.
type Timing struct {
	// Total runs from sending the request to the last byte of the body.
	Total time.Duration
	// TTFB runs to the first complete SSE event (streams) or to the
	// response headers (plain replies).
	TTFB time.Duration
	// Gaps are the times between consecutive SSE events, after the first.
	Gaps []time.Duration
	// Events is how many SSE events arrived.
	Events int
	// Arrived is when each SSE event was complete, and ReplyID the first
	// "id" its first event holds (the reply's, as the provider made it):
	// with the provider's own send times, where each gap came from.
	Arrived []time.Time
	ReplyID string
	// Sent is when the fake provider began to write each of those events,
	// where the caller looked them up (rig.sentTimes); nil otherwise.
	Sent []time.Time
	// FrameItems and FrameTokens are the frame figures Perpetuity reported
	// (response headers; 0 without recall).
	FrameItems, FrameTokens int
	// Memory, Forward and Upstream are what Perpetuity's Server-Timing
	// reported: its capture and frame, its time until it forwarded the
	// request, and the provider's answer as it waited for it (0 when
	// absent).
	Memory, Forward, Upstream time.Duration
	// UpBytes is the size of the request body the provider got for this
	// call (set by the pipeline's caller only).
	UpBytes int
}

// newClient is the load tool's HTTP client: keep-alive, enough idle
// connections for the concurrency, no proxy from the environment.
func newClient(conns int) *http.Client {
	return &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{
		Proxy: nil, MaxIdleConns: 4 * conns, MaxIdleConnsPerHost: 2 * conns, IdleConnTimeout: time.Minute,
		DisableCompression: true,
	}}
}

// Call sends body and reads the whole reply, timing it. A stream must end
// with its terminator ([DONE] or message_stop); any status but 200 is an
// error.
func (e Endpoint) Call(ctx context.Context, c *http.Client, body []byte, stream bool) (Timing, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(body))
	if err != nil {
		return Timing{}, err
	}
	req.Header = e.Header.Clone()
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return Timing{}, err
	}
	defer resp.Body.Close()
	var t Timing
	t.FrameItems, _ = strconv.Atoi(resp.Header.Get(proxy.HeaderFrameItems))
	t.FrameTokens, _ = strconv.Atoi(resp.Header.Get(proxy.HeaderFrameTokens))
	// A front server may add a Server-Timing line of its own.
	t.Memory, t.Forward, t.Upstream = serverTiming(strings.Join(resp.Header.Values(proxy.HeaderServerTiming), ","))
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return t, fmt.Errorf("%s: %s: %s", e.URL, resp.Status, bytes.TrimSpace(b))
	}
	if !stream {
		t.TTFB = time.Since(start)
		// Read the body whole, as a client parsing JSON would.
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return t, err
		}
		t.Total = time.Since(start)
		return t, nil
	}
	st, err := readStream(resp.Body, start)
	st.FrameItems, st.FrameTokens = t.FrameItems, t.FrameTokens
	st.Memory, st.Forward, st.Upstream = t.Memory, t.Forward, t.Upstream
	return st, err
}

// firstID is the value of the first "id" member in an event's data: a
// chat chunk's own id, or the message's in Anthropic's message_start.
func firstID(data []byte) string {
	const key = `"id":"`
	i := bytes.Index(data, []byte(key))
	if i < 0 {
		return ""
	}
	rest := data[i+len(key):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return ""
	}
	return string(rest[:end])
}

// readStream times each SSE event as it completes (its blank line).
func readStream(r io.Reader, start time.Time) (Timing, error) {
	var t Timing
	br := bufio.NewReaderSize(r, 16<<10)
	var last time.Time
	var data []byte
	done := false
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			l := bytes.TrimRight(line, "\r\n")
			switch {
			case len(l) == 0:
				now := time.Now()
				if t.Events == 0 {
					t.TTFB = now.Sub(start)
					t.ReplyID = firstID(data)
				} else {
					t.Gaps = append(t.Gaps, now.Sub(last))
				}
				last = now
				t.Arrived = append(t.Arrived, now)
				t.Events++
				if bytes.Equal(data, []byte("[DONE]")) || bytes.Contains(data, []byte(`"message_stop"`)) {
					done = true
				}
				data = data[:0]
			case bytes.HasPrefix(l, []byte("data:")):
				data = append(data[:0], bytes.TrimSpace(l[5:])...)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return t, err
		}
	}
	t.Total = time.Since(start)
	if !done {
		return t, errors.New("stream ended without its terminator")
	}
	return t, nil
}

// Interleave sends n pairs of requests from c workers. Each pair calls the
// baseline (side 0) and the subject (side 1) back to back in a random
// order, so that drift and noise on the shared machine land on both sides
// alike. call gets the side and the pair's index. A pair with a failed
// request is dropped and counted; more than one failure in a hundred pairs
// stops the run with the first error.
func Interleave(ctx context.Context, c, n int, call func(ctx context.Context, side, i int) (Timing, error)) (base, subj []Timing, failed int, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	allowed := max(1, n/100)
	var mu sync.Mutex
	var next atomic.Int64
	var once sync.Once
	var firstErr error
	var wg sync.WaitGroup
	for w := range c {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 0xbe7c4))
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				first := rng.IntN(2)
				var ts [2]Timing
				var perr error
				for k := range 2 {
					side := first ^ k
					t, err := call(ctx, side, i)
					if err != nil {
						perr = fmt.Errorf("side %d: %w", side, err)
						break
					}
					ts[side] = t
				}
				mu.Lock()
				if perr != nil {
					failed++
					if failed > allowed {
						once.Do(func() { firstErr = perr; cancel() })
					}
				} else {
					base, subj = append(base, ts[0]), append(subj, ts[1])
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, nil, failed, fmt.Errorf("%d of %d pairs failed: %w", failed, n, firstErr)
	}
	return base, subj, failed, ctx.Err()
}

// OpenLoop offers requests at a fixed rate for d, whatever the server's
// speed (a closed loop would slow down with it and hide the queueing).
// Latency runs from when a request was due, not when it was sent. Requests
// that would exceed maxInflight are not sent and count as failed, as are
// requests whose call errs.
func OpenLoop(ctx context.Context, rate float64, d time.Duration, maxInflight int, call func(ctx context.Context, i int) error) (lat []time.Duration, failed int) {
	n := max(1, int(rate*d.Seconds()))
	interval := time.Duration(float64(time.Second) / rate)
	var mu sync.Mutex
	var inflight atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		due := start.Add(time.Duration(i) * interval)
		if w := time.Until(due); w > 0 {
			select {
			case <-time.After(w):
			case <-ctx.Done():
				wg.Wait()
				return lat, failed + n - i
			}
		}
		if inflight.Load() >= int64(maxInflight) {
			mu.Lock()
			failed++
			mu.Unlock()
			continue
		}
		inflight.Add(1)
		wg.Go(func() {
			defer inflight.Add(-1)
			err := call(ctx, i)
			took := time.Since(due)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				return
			}
			lat = append(lat, took)
		})
	}
	wg.Wait()
	return lat, failed
}

// serverTiming reads the memory, forward and upstream durations of a
// Server-Timing header ("memory;dur=4.2, forward;dur=4.5, upstream;dur=0.9");
// what it lacks is 0.
func serverTiming(h string) (memory, forward, upstream time.Duration) {
	for _, metric := range strings.Split(h, ",") {
		params := strings.Split(metric, ";")
		var d time.Duration
		for _, p := range params[1:] {
			k, v, _ := strings.Cut(p, "=")
			if strings.TrimSpace(k) != "dur" {
				continue
			}
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				d = time.Duration(f * float64(time.Millisecond))
			}
		}
		switch strings.TrimSpace(params[0]) {
		case "memory":
			memory = d
		case "forward":
			forward = d
		case "upstream":
			upstream = d
		}
	}
	return memory, forward, upstream
}
