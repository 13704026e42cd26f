package edge

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
	"github.com/perpetuity/perpetuity/e2e/reliability/internal/harness"
)

const (
	// bodyTimeout is the server's PERPETUITY_BODY_TIMEOUT here: short, so
	// the short form is quick.
	bodyTimeout = 2 * time.Second
	// closeGrace is how long past the deadline a connection may still be
	// open: scheduling on a loaded 2-core machine, not a target.
	closeGrace = 3 * time.Second
	// declared is what each attacker's Content-Length promises.
	declared = 1000
	trickle  = 250 * time.Millisecond // a trickled body sends one byte this often
	// slowMark in a question makes the fake stream its reply slowly, for
	// longer than the body deadline.
	slowMark   = "[[slow]]"
	slowChunks = 10
	slowDelay  = 500 * time.Millisecond
	// waitMark makes the fake answer only after waitDelay, longer than the
	// body deadline.
	waitMark  = "[[wait]]"
	waitDelay = 4 * time.Second
	// A legitimate slow upload: uploadBytes in uploadPiece pieces every
	// uploadGap (160 KB/s), twice as long as the body deadline.
	uploadBytes = 640 << 10
	uploadPiece = 32 << 10
	uploadGap   = 200 * time.Millisecond
	// bodySlack is how far above the baseline goroutines and open files
	// may settle (pooled connections come and go).
	bodySlack   = 8
	maxProbeLat = 2 * time.Second
)

// bodyTarget is a route an attacker's body goes to.
type bodyTarget struct {
	name, path, contentType string
	header                  map[string]string
	dialect                 bool // answers in the OpenAI dialect
}

func bodyTargets(key string) []bodyTarget {
	return []bodyTarget{
		{name: "POST /healthz", path: "/healthz", contentType: "text/plain"},
		{name: "POST /signin", path: "/signin", contentType: "application/x-www-form-urlencoded"},
		{name: "chat", path: "/k/" + key + "/v1/chat/completions", contentType: "application/json",
			header: map[string]string{"Authorization": "Bearer sk-edge"}, dialect: true},
		{name: "import", path: "/k/" + key + "/perpetuity/import", contentType: "application/x-ndjson"},
	}
}

// TestSlowAndAbsentBodies is finding 3: the server set ReadHeaderTimeout
// but no body deadline, so a request that declared a body and never sent
// it, or trickled it, held its connection and file descriptor forever.
func TestSlowAndAbsentBodies(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, "PERPETUITY_BODY_TIMEOUT="+bodyTimeout.String())
	s.Upstream.Config.SetKeepAlivesEnabled(false)
	s.Fake.SetDefault(func(r fakeprovider.Recorded) fakeprovider.Reply {
		switch {
		case bytes.Contains(r.Body, []byte(slowMark)):
			return fakeprovider.Reply{Text: strings.Repeat("slowly but surely ", slowChunks), Chunks: slowChunks, ChunkDelay: slowDelay}
		case bytes.Contains(r.Body, []byte(waitMark)):
			return fakeprovider.Reply{Text: "worth the wait", FirstByteDelay: waitDelay}
		}
		return fakeprovider.Reply{}
	})
	absent, trickled := figure.N(50, 5), figure.N(300, 15)
	host := strings.TrimPrefix(s.URL, "http://")
	targets := bodyTargets(s.Key)

	// The pools the streams will use are filled before the baseline.
	for i, d := range harness.Dialects {
		if tr := stream(s, d, 900+i, "warm up"); !tr.CleanLooking() {
			t.Fatalf("warm-up stream %s: %+v", d.Name, tr)
		}
	}
	base := s.Sample(t)

	// Long replies run through the attack: a body deadline must not cut
	// what comes after the body.
	var side sync.WaitGroup
	streams := make([]harness.Transcript, len(harness.Dialects))
	var streamTook [2]time.Duration
	for i, d := range harness.Dialects {
		side.Go(func() {
			t0 := time.Now()
			streams[i] = stream(s, d, 1000+i, slowMark)
			streamTook[i] = time.Since(t0)
		})
	}
	var waited answer
	side.Go(func() { waited = waitedReply(s, host) })
	var upload answer
	side.Go(func() { upload = slowUpload(s, host) })

	attackStart := time.Now()
	var conns []*attackConn
	for _, tg := range targets {
		for range absent {
			conns = append(conns, openAttack(t, host, tg, declared, sendNothing))
		}
	}
	trickleTargets := targets[1:] // sign-in, chat and import, as in the finding
	for i := range trickled {
		conns = append(conns, openAttack(t, host, trickleTargets[i%len(trickleTargets)], declared, sendTrickle))
	}
	opened := time.Since(attackStart)
	under := s.Sample(t)

	// /healthz on fresh connections until every attacker is closed or the
	// deadline and its grace have passed for the last one opened.
	giveUp := attackStart.Add(opened + bodyTimeout + closeGrace)
	var lat []time.Duration
	var probeErrs []error
	pc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for time.Now().Before(giveUp) && !allClosed(conns) {
		t0 := time.Now()
		err := probeOnce(pc, s.URL)
		if err != nil {
			probeErrs = append(probeErrs, err)
		} else {
			lat = append(lat, time.Since(t0))
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, c := range conns {
		c.hangUp()
	}
	side.Wait()
	after, settled := s.Settle(t, base, bodySlack, 30*time.Second)

	late, open := 0, 0
	var lives []time.Duration
	byTarget := map[string]map[string]int{}
	badChat := 0
	for _, c := range conns {
		r := c.result()
		key := c.target.name
		if c.send == sendTrickle {
			key += " (trickled)"
		}
		if byTarget[key] == nil {
			byTarget[key] = map[string]int{}
		}
		switch {
		case !r.closed:
			open++
			byTarget[key]["still open"]++
			continue
		case r.life > bodyTimeout+closeGrace:
			late++
		}
		lives = append(lives, r.life)
		byTarget[key][r.status()]++
		if c.target.dialect && (r.code() != http.StatusRequestTimeout || !harness.ErrorBody(harness.OpenAI, r.body())) {
			badChat++
		}
	}
	cleanStreams := 0
	for _, tr := range streams {
		if tr.CleanLooking() && tr.Deltas >= slowChunks {
			cleanStreams++
		}
	}
	p99 := harness.Percentile(lat, 99)
	pass := open == 0 && late == 0 && badChat == 0 && len(probeErrs) == 0 && p99 < maxProbeLat && settled &&
		cleanStreams == len(streams) && waited.code() == http.StatusOK && upload.code() == http.StatusOK
	figure.Record(t, figure.Figure{
		Item: 103, Name: "Slow and absent request bodies",
		Figure: fmt.Sprintf("%d connections declaring a %d-byte body and sending none (%d each to %d routes) and %d trickling it a byte every %v: %d closed by the server after %.1f..%.1f s (deadline %v), %d late, %d still open; answers %s; "+
			"/healthz p99 %s over %d probes (%d failed); goroutines %d -> %d under attack -> %d after, open files %d -> %d -> %d; "+
			"%d of %d streams of %.1f s complete, a reply after %v: %s, a %d KB upload over %.1f s: %s",
			absent*len(targets), declared, absent, len(targets), trickled, trickle, len(lives), harness.Percentile(lives, 0).Seconds(), harness.Percentile(lives, 100).Seconds(),
			bodyTimeout, late, open, targetLine(byTarget),
			harness.Ms(p99), len(lat)+len(probeErrs), len(probeErrs), base.Goroutines, under.Goroutines, after.Goroutines, base.FDs, under.FDs, after.FDs,
			cleanStreams, len(streams), max(streamTook[0], streamTook[1]).Seconds(), waitDelay, waited.status(), uploadBytes>>10, upload.took.Seconds(), upload.status()),
		Target: fmt.Sprintf("every connection answered or closed within the body deadline + %v; the chat route answers 408 in its dialect; /healthz answers (p99 < %v); goroutines and open files back within %d of the baseline; streams, late replies and uploads faster than the floor rate unaffected",
			closeGrace, maxProbeLat, bodySlack),
		Pass: pass,
		Details: fmt.Sprintf("The real binary with PERPETUITY_BODY_TIMEOUT=%v. Each attacker writes a POST's headers with Content-Length: %d on a raw connection, then nothing, or one byte every %v; "+
			"POST /healthz is a route whose handler reads no body (net/http then discards it before answering), sign-in reads a form, chat and import read the whole body. "+
			"A connection's life runs from its headers to the server closing it. Alongside: a streamed reply per dialect of %d chunks %v apart, a non-streamed reply the provider starts after %v, "+
			"and a %d KB chat body sent in %d KB pieces every %v. Goroutines are go_goroutines from /metrics, open files /proc/<pid>/fd.",
			bodyTimeout, declared, trickle, slowChunks, slowDelay, waitDelay, uploadBytes>>10, uploadPiece>>10, uploadGap),
	})
	if open > 0 || late > 0 {
		t.Errorf("%d attack connections still open %v after the deadline, %d closed later than %v: %s",
			open, closeGrace, late, bodyTimeout+closeGrace, targetLine(byTarget))
	}
	if badChat > 0 {
		t.Errorf("%d chat attackers did not get a 408 in the OpenAI dialect: %s", badChat, targetLine(byTarget))
	}
	for i, err := range probeErrs {
		if i == 5 {
			break
		}
		t.Errorf("/healthz under attack: %v", err)
	}
	if p99 >= maxProbeLat {
		t.Errorf("/healthz p99 %v under attack, want < %v", p99, maxProbeLat)
	}
	if !settled {
		t.Errorf("after the attack: %d goroutines (baseline %d), %d open files (baseline %d)", after.Goroutines, base.Goroutines, after.FDs, base.FDs)
	}
	for i, tr := range streams {
		if !tr.CleanLooking() || tr.Deltas < slowChunks {
			t.Errorf("%s stream through the attack: %d deltas, terminal %v, errors %d, end %v", harness.Dialects[i].Name, tr.Deltas, tr.Terminal, tr.Errors, tr.End)
		}
	}
	if waited.code() != http.StatusOK {
		t.Errorf("reply after %v: %s %v", waitDelay, waited.status(), waited.err)
	}
	if upload.code() != http.StatusOK {
		t.Errorf("%d KB upload over %.1f s: %s %v", uploadBytes>>10, upload.took.Seconds(), upload.status(), upload.err)
	}
}

// sendMode is what an attacker sends of the body it declared.
type sendMode int

const (
	sendNothing    sendMode = iota
	sendTrickle             // one byte every trickle, never the whole body
	sendAllButLast          // every byte but the last at once (fillPiece at a time), then nothing
)

const fillPiece = 32 << 10

// attackConn is one connection that declared a body and sends it slowly,
// not at all, or all but its end.
type attackConn struct {
	target bodyTarget
	send   sendMode
	conn   net.Conn
	opened time.Time
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	res    answer
}

// answer is what came back on a connection before the server closed it.
type answer struct {
	raw    []byte
	closed bool // by the server
	life   time.Duration
	took   time.Duration
	err    error
}

func (a answer) code() int {
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(a.raw)), nil)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (a answer) status() string {
	if c := a.code(); c != 0 {
		return fmt.Sprint(c)
	}
	return "closed unanswered"
}

// header is the value of the answer's header k.
func (a answer) header(k string) string {
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(a.raw)), nil)
	if err != nil {
		return ""
	}
	resp.Body.Close()
	return resp.Header.Get(k)
}

func (a answer) body() []byte {
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(a.raw)), nil)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b
}

func openAttack(t *testing.T, host string, tg bodyTarget, size int, send sendMode) *attackConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	var h strings.Builder
	fmt.Fprintf(&h, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n", tg.path, host, tg.contentType, size)
	for k, v := range tg.header {
		fmt.Fprintf(&h, "%s: %s\r\n", k, v)
	}
	h.WriteString("\r\n")
	if _, err := io.WriteString(conn, h.String()); err != nil {
		t.Fatalf("write headers: %v", err)
	}
	c := &attackConn{target: tg, send: send, conn: conn, opened: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		b, err := io.ReadAll(conn)
		c.res = answer{raw: b, life: time.Since(c.opened)}
		select {
		case <-c.stop: // we hung up
		default:
			c.res.closed = err == nil || !isClosedByUs(err)
		}
	}()
	switch send {
	case sendAllButLast:
		go func() {
			piece := bytes.Repeat([]byte("x"), fillPiece)
			for left := size - 1; left > 0; left -= len(piece) {
				if _, err := conn.Write(piece[:min(len(piece), left)]); err != nil {
					return // refused and closed, or we hung up
				}
			}
		}()
	case sendTrickle:
		go func() {
			tick := time.NewTicker(trickle)
			defer tick.Stop()
			for range size - 1 { // never the whole body
				select {
				case <-c.stop:
					return
				case <-c.done:
					return
				case <-tick.C:
					if _, err := conn.Write([]byte("a")); err != nil {
						return
					}
				}
			}
		}()
	}
	return c
}

func isClosedByUs(err error) bool {
	return strings.Contains(err.Error(), "use of closed network connection")
}

func (c *attackConn) closedYet() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *attackConn) hangUp() {
	c.once.Do(func() {
		close(c.stop)
		c.conn.Close()
	})
}

func (c *attackConn) result() answer {
	<-c.done
	return c.res
}

func allClosed(cs []*attackConn) bool {
	for _, c := range cs {
		if !c.closedYet() {
			return false
		}
	}
	return true
}

func probeOnce(c *http.Client, url string) error {
	resp, err := c.Get(url + "/healthz")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// stream sends a streamed question (capture off) and reads the reply.
func stream(s *harness.Server, d harness.Dialect, tag int, text string) harness.Transcript {
	req := s.Request(context.Background(), d, harness.Question(tag, text), true)
	req.Header.Set("X-Perpetuity-Capture", "off")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return harness.Transcript{End: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return harness.Transcript{End: fmt.Errorf("status %d: %s", resp.StatusCode, b)}
	}
	return harness.ReadStream(d, resp.Body, nil)
}

// waitedReply asks a non-streamed question the provider answers only after
// the body deadline has passed.
func waitedReply(s *harness.Server, host string) answer {
	body := harness.OpenAI.Body(harness.Question(2000, waitMark), false)
	return sendPaced(host, s.Key, body, len(body), 0)
}

// slowUpload sends a big chat body in pieces, faster than the floor rate
// but for longer than the body deadline.
func slowUpload(s *harness.Server, host string) answer {
	filler := strings.Repeat("x", uploadBytes)
	body := harness.OpenAI.Body(harness.Question(3000, "a long paste "+filler), false)
	return sendPaced(host, s.Key, body, uploadPiece, uploadGap)
}

// sendPaced writes a chat request on a raw connection, its body in pieces
// of piece bytes gap apart, and reads the answer.
func sendPaced(host, key string, body []byte, piece int, gap time.Duration) answer {
	t0 := time.Now()
	conn, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		return answer{err: err}
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	head := fmt.Sprintf("POST /k/%s/v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAuthorization: Bearer sk-edge\r\n"+
		"X-Perpetuity-Capture: off\r\nX-Perpetuity-Recall: off\r\nConnection: close\r\nContent-Length: %d\r\n\r\n", key, host, len(body))
	if _, err := io.WriteString(conn, head); err != nil {
		return answer{err: err}
	}
	for off := 0; off < len(body); off += piece {
		if off > 0 {
			time.Sleep(gap)
		}
		if _, err := conn.Write(body[off:min(off+piece, len(body))]); err != nil {
			return answer{err: fmt.Errorf("after %d of %d bytes: %w", off, len(body), err), took: time.Since(t0)}
		}
	}
	b, err := io.ReadAll(conn)
	return answer{raw: b, err: err, took: time.Since(t0)}
}

func targetLine(m map[string]map[string]int) string {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, n+": "+statusCounts(m[n]))
	}
	return strings.Join(parts, "; ")
}

// statusCounts is "400 x1, 503 x2" for {503: 2, 400: 1}.
func statusCounts(m map[string]int) string {
	var ss []string
	for st, k := range m {
		ss = append(ss, fmt.Sprintf("%s x%d", st, k))
	}
	sort.Strings(ss)
	return strings.Join(ss, ", ")
}
