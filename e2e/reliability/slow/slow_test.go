// Package slow is issue 9 item 9: slow clients. Slowloris connections
// (request headers sent a byte at a time, never finished) and slow readers
// (a big streamed reply requested, then read very slowly or not at all)
// must not starve anyone else: GET /healthz stays fast while they hold
// their connections, the server closes the slowloris connections itself
// (ReadHeaderTimeout), and once the attackers are gone the server's
// goroutines and open files return to where they were.
package slow

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
	"github.com/perpetuity/perpetuity/e2e/reliability/internal/harness"
)

const (
	// readHeaderTimeout is app/serve.go's http.Server.ReadHeaderTimeout;
	// the full form waits for it to close every slowloris connection.
	readHeaderTimeout = 10 * time.Second
	drip              = 500 * time.Millisecond // a slowloris sends one header byte this often
	probes            = 200                    // GET /healthz while under attack
	maxProbeP99       = 200 * time.Millisecond
	// replyBytes is each slow reader's streamed reply: more than the
	// kernel's socket buffers hold (on loopback the server's send buffer
	// grows to tcp_wmem's 4 MiB), so the server's writes block.
	replyBytes    = 8 << 20
	slowReadEvery = 500 * time.Millisecond
	slowReadBytes = 64 // what a slow reader takes each time
	// slack is how far above the baseline goroutines and open files may
	// settle: pooled connections (upstream, database) come and go.
	slack = 8
	// warmRequests ordinary streams come before the baseline.
	warmRequests = 8
)

func TestSlowClients(t *testing.T) {
	t.Parallel()
	s := harness.Start(t)
	loris, readers := figure.N(300, 44), figure.N(100, 6)
	// Full form: probes spread over more than ReadHeaderTimeout, so the
	// server's closing of slowloris connections is seen while under attack.
	probeGap := time.Duration(figure.N(70, 15)) * time.Millisecond
	big := bigReply() // one string shared by every reply
	s.Fake.SetDefault(func(fakeprovider.Recorded) fakeprovider.Reply {
		return fakeprovider.Reply{Text: big, Chunks: replyBytes / (16 << 10)}
	})
	// Without keep-alive upstream the proxy holds no idle provider
	// connections, so what it holds after the attack is its own.
	s.Upstream.Config.SetKeepAlivesEnabled(false)
	host := strings.TrimPrefix(s.URL, "http://")
	start := time.Now()
	step := func(what string) { t.Logf("%6.1fs %s", time.Since(start).Seconds(), what) }

	// Baseline after a few ordinary requests, so that the pools the attack
	// will use already hold what a working server holds.
	warm(t, s)
	base := s.Sample(t)
	quiet, _ := probe(s.URL, probeGap)
	step(fmt.Sprintf("baseline: %d goroutines, %d open files; /healthz p99 %v unloaded", base.Goroutines, base.FDs, harness.Percentile(quiet, 99)))

	// The attack: slow readers first (their replies take a while to fill
	// the buffers), then the slowloris connections, which the server drops
	// after ReadHeaderTimeout and which then come back.
	slowReaders := make([]*slowReader, readers)
	for i := range slowReaders {
		r, err := openSlowReader(s, i+1, i%2 == 0)
		if err != nil {
			t.Fatalf("slow reader %d: %v", i, err)
		}
		slowReaders[i] = r
	}
	defer func() {
		for _, r := range slowReaders {
			r.hangUp()
		}
	}()
	// The readers' replies are relayed until the buffers are full: a few
	// hundred MiB in the full form, slow on a busy machine.
	busy := time.Duration(figure.N(180, 60)) * time.Second
	wctx, cancel := context.WithTimeout(context.Background(), busy)
	defer cancel()
	if err := s.Fake.WaitRequests(wctx, warmRequests+readers); err != nil {
		t.Fatalf("slow readers' requests did not all reach the provider: %v", err)
	}
	quietDown(t, s, busy) // the readers' buffers are full and the server waits on them
	step("slow readers in place")
	attack := newLorisAttack(host, loris)
	defer attack.stop()
	if err := attack.wait(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	attackStart := time.Now()
	under := s.Sample(t)
	step(fmt.Sprintf("under attack: %d goroutines, %d open files", under.Goroutines, under.FDs))
	lat, probeErrs := probe(s.URL, probeGap)
	p50, p99, worst := harness.Percentile(lat, 50), harness.Percentile(lat, 99), harness.Percentile(lat, 100)
	step("probed")
	if figure.Full() {
		// Every slowloris of the first wave must have been dropped by now.
		time.Sleep(time.Until(attackStart.Add(readHeaderTimeout + 2*time.Second)))
	}
	lives, dialErrs := attack.stop()
	answered := 0
	for _, r := range slowReaders {
		if r.answered() {
			answered++
		}
	}
	for _, r := range slowReaders {
		r.hangUp()
	}
	step("released")
	// Captures of the slow readers' partial replies run after they leave.
	after, settled := s.Settle(t, base, slack, 30*time.Second)
	step(fmt.Sprintf("settled %v: %d goroutines, %d open files", settled, after.Goroutines, after.FDs))

	// The server closes a slowloris connection ReadHeaderTimeout after it
	// opened; the drip and scheduling add a little.
	lateCloses := 0
	for _, l := range lives {
		if l > readHeaderTimeout+2*time.Second {
			lateCloses++
		}
	}
	lorisOK := len(lives) >= loris && lateCloses == 0
	lorisLine := fmt.Sprintf("slowloris connections closed by the server %d (lived %.1f..%.1f s)", len(lives),
		harness.Percentile(lives, 0).Seconds(), harness.Percentile(lives, 100).Seconds())
	if !figure.Full() {
		lorisOK = lateCloses == 0
		lorisLine = fmt.Sprintf("slowloris hung up by the client after %.1f s (the full form outlasts the server's %v ReadHeaderTimeout)",
			time.Since(attackStart).Seconds(), readHeaderTimeout)
	}
	pass := len(probeErrs) == 0 && p99 < maxProbeP99 && settled && lorisOK && dialErrs == 0 && answered == readers
	figure.Record(t, figure.Figure{
		Item: 9, Name: "Slowloris and slow readers",
		Figure: fmt.Sprintf("%d slowloris + %d slow readers: /healthz p50 %s, p99 %s, max %s over %d probes (%d failed; p99 %s before the attack); %s; goroutines %d -> %d under attack -> %d after, open files %d -> %d -> %d",
			loris, readers, harness.Ms(p50), harness.Ms(p99), harness.Ms(worst), probes, len(probeErrs), harness.Ms(harness.Percentile(quiet, 99)), lorisLine,
			base.Goroutines, under.Goroutines, after.Goroutines, base.FDs, under.FDs, after.FDs),
		Target: fmt.Sprintf("/healthz p99 < %v under attack; slowloris closed by the server after ReadHeaderTimeout; goroutines and open files back within %d of the baseline", maxProbeP99, slack),
		Pass:   pass,
		Details: fmt.Sprintf("The real binary with a fake provider. Slowloris: a POST request line and a Host header, then one more header byte every %v, never the blank line; "+
			"a connection the server drops is opened again, so the count holds for the whole attack. "+
			"Slow readers: a streamed request (half OpenAI, half Anthropic, capture off) for a %d MiB reply, more than the socket buffers hold, then half read nothing and half read %d bytes every %v; "+
			"the slowloris wave and the probes start once the server has stopped using CPU, i.e. its writes to the readers are blocked. "+
			"Probes: %d GET /healthz, each on a new connection, %v apart, first without the attack, then under it. "+
			"Goroutines are the server's go_goroutines from /metrics, open files the entries of /proc/<pid>/fd; the baseline is taken after %d ordinary "+
			"requests, with the fake provider closing its connections after each reply so that idle upstream connections do not blur the count. "+
			"The server sets ReadHeaderTimeout %v and no WriteTimeout (streams must outlive it), so a reader that never reads holds its "+
			"handler and its provider stream until it leaves.",
			drip, replyBytes>>20, slowReadBytes, slowReadEvery, probes, probeGap, warmRequests, readHeaderTimeout),
	})
	for i, err := range probeErrs {
		if i == 10 {
			break
		}
		t.Errorf("probe: %v", err)
	}
	if p99 >= maxProbeP99 {
		t.Errorf("/healthz p99 %v under attack, want < %v", p99, maxProbeP99)
	}
	if answered != readers {
		t.Errorf("only %d of %d slow readers got a 200 stream", answered, readers)
	}
	if dialErrs > 0 {
		t.Errorf("%d slowloris connections could not be (re)opened", dialErrs)
	}
	if !lorisOK {
		t.Errorf("slowloris: %d closed by the server, %d of them later than %v after opening", len(lives), lateCloses, readHeaderTimeout+2*time.Second)
	}
	if !settled {
		t.Errorf("after the attack: %d goroutines (baseline %d), %d open files (baseline %d)", after.Goroutines, base.Goroutines, after.FDs, base.FDs)
	}
}

func bigReply() string {
	var b strings.Builder
	for b.Len() < replyBytes {
		b.WriteString("all work and no play makes a slow reader. ")
	}
	return b.String()
}

// warm sends a few ordinary streamed requests at once and waits for their
// captures.
func warm(t *testing.T, s *harness.Server) {
	t.Helper()
	var wg sync.WaitGroup
	for i := range warmRequests {
		wg.Go(func() {
			d := harness.Dialects[i%2]
			req := s.Request(context.Background(), d, harness.Question(100000+i, "warm up"), true)
			req.Header.Set("X-Perpetuity-Capture", "off") // the baseline should not wait on big captures
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
		})
	}
	wg.Wait()
	time.Sleep(500 * time.Millisecond)
}

// quietDown waits (at most max) until the server has used less than 5% of
// a CPU over a second: it has relayed what the slow readers' buffers take
// and now waits on them.
func quietDown(t *testing.T, s *harness.Server, max time.Duration) {
	t.Helper()
	deadline := time.Now().Add(max)
	prev := cpuTime(t, s.PID())
	for time.Now().Before(deadline) {
		time.Sleep(time.Second)
		now := cpuTime(t, s.PID())
		if now-prev < 50*time.Millisecond {
			return
		}
		prev = now
	}
	t.Logf("the server was still busy after %v", max)
}

// cpuTime is the user+system CPU time a process has used.
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command (which may hold spaces), from its ")":
	// state is field 3, utime 14 and stime 15, in clock ticks (100 Hz).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// probe times GET /healthz, each on a new connection.
func probe(url string, gap time.Duration) ([]time.Duration, []error) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var lat []time.Duration
	var errs []error
	for range probes {
		start := time.Now()
		resp, err := c.Get(url + "/healthz")
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
		}
		d := time.Since(start)
		if err != nil {
			errs = append(errs, err)
		} else {
			lat = append(lat, d)
		}
		time.Sleep(gap)
	}
	return lat, errs
}

// lorisAttack keeps n connections sending their request headers a byte
// at a time, never ending them; a connection the server drops is opened
// again until the attack stops.
type lorisAttack struct {
	host    string
	n       int
	done    chan struct{}
	wg      sync.WaitGroup
	open    atomic.Int64
	mu      sync.Mutex
	lives   []time.Duration // open to closed-by-server, per dropped connection
	dialErr int
	once    sync.Once
}

func newLorisAttack(host string, n int) *lorisAttack {
	a := &lorisAttack{host: host, n: n, done: make(chan struct{})}
	for range n {
		a.wg.Go(a.slot)
	}
	return a
}

// wait blocks until every slot has its connection open.
func (a *lorisAttack) wait(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for a.open.Load() < int64(a.n) {
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d slowloris connections open after %v", a.open.Load(), a.n, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// stop hangs up every connection and reports how long those the server
// dropped had lived, and how many (re)connections failed.
func (a *lorisAttack) stop() ([]time.Duration, int) {
	a.once.Do(func() { close(a.done) })
	a.wg.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lives, a.dialErr
}

func (a *lorisAttack) slot() {
	for {
		select {
		case <-a.done:
			return
		default:
		}
		life, dropped, err := a.conn()
		a.mu.Lock()
		switch {
		case err != nil:
			a.dialErr++
		case dropped:
			a.lives = append(a.lives, life)
		}
		a.mu.Unlock()
		if err != nil {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// conn runs one slowloris connection until the server drops it (dropped)
// or the attack stops.
func (a *lorisAttack) conn() (life time.Duration, dropped bool, err error) {
	conn, err := net.Dial("tcp", a.host)
	if err != nil {
		return 0, false, err
	}
	defer conn.Close()
	opened := time.Now()
	if _, err := io.WriteString(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: "+a.host+"\r\nX-Slow: "); err != nil {
		return 0, false, err
	}
	a.open.Add(1)
	defer a.open.Add(-1)
	closed := make(chan struct{})
	go func() {
		// The server never answers a request it has not read; a read
		// returns only when it drops the connection (or we hang up).
		_, _ = conn.Read(make([]byte, 1))
		close(closed)
	}()
	tick := time.NewTicker(drip)
	defer tick.Stop()
	for {
		select {
		case <-a.done:
			return 0, false, nil
		case <-closed:
			return time.Since(opened), true, nil
		case <-tick.C:
			_, _ = conn.Write([]byte("a"))
		}
	}
}

// slowReader asks for a big streamed reply and then reads it very slowly,
// or, past its status line, not at all.
type slowReader struct {
	conn   net.Conn
	stop   chan struct{}
	once   sync.Once
	status atomic.Value // the response's first bytes, "HTTP/1.1 200"
}

func openSlowReader(s *harness.Server, tag int, readsNothing bool) (*slowReader, error) {
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		return nil, err
	}
	// Small receive buffer: the reader's share of the kernel's memory.
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	d := harness.Dialects[tag%2]
	req := s.Request(context.Background(), d, harness.Question(tag, "tell me everything, slowly"), true)
	// Storing a multi-megabyte partial reply is ordinary work that any client
	// can ask for (items 3 and 10 measure capture); here it would only blur
	// what slowness alone costs.
	req.Header.Set("X-Perpetuity-Capture", "off")
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, err
	}
	r := &slowReader{conn: conn, stop: make(chan struct{})}
	r.status.Store("")
	go func() {
		head := make([]byte, len("HTTP/1.1 200"))
		if _, err := io.ReadFull(conn, head); err != nil {
			return
		}
		r.status.Store(string(head))
		if readsNothing {
			return
		}
		buf := make([]byte, slowReadBytes)
		tick := time.NewTicker(slowReadEvery)
		defer tick.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-tick.C:
				if _, err := conn.Read(buf); err != nil {
					return
				}
			}
		}
	}()
	return r, nil
}

// answered reports whether the server started the reader's stream.
func (r *slowReader) answered() bool { return r.status.Load() == "HTTP/1.1 200" }

func (r *slowReader) hangUp() {
	r.once.Do(func() {
		close(r.stop)
		r.conn.Close()
	})
}
