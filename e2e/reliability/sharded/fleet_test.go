package sharded

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/reliability/internal/harness"
	"github.com/perpetuity/perpetuity/e2e/rig"
)

// fleet is three `perpetuity serve` replicas on one database, each on a
// port of its own that it keeps across restarts (the balancer's config
// names them).
type fleet struct {
	t     *testing.T
	env   []string // shared by every replica
	ports []int
	mu    sync.Mutex
	procs []*rig.Proc
	all   []*rig.Proc // every process started, in order
}

// servedBy is the process that logged request id rid, or nil.
func (f *fleet) servedBy(rid string) *rig.Proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.all {
		if strings.Contains(p.Log.String(), `"request_id":"`+rid+`"`) {
			return p
		}
	}
	return nil
}

func (f *fleet) proc(i int) *rig.Proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.procs[i]
}

// start runs replica i (0-based, share i+1 of 3) and waits until /readyz
// says it is ready for its tenants.
func (f *fleet) start(i int, extra ...string) time.Duration {
	f.t.Helper()
	began := time.Now()
	env := append(append([]string{}, f.env...), extra...)
	env = append(env, fmt.Sprintf("PERPETUITY_ADDR=127.0.0.1:%d", f.ports[i]), fmt.Sprintf("PERPETUITY_SHARD=%d/%d", i+1, len(f.ports)))
	p, err := rig.Serve(f.t, env)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		if f.t.Failed() {
			// Its warnings and errors and how it ended: the whole log of a
			// replica is thousands of request lines.
			var keep []string
			for _, line := range strings.Split(p.Log.String(), "\n") {
				if (strings.Contains(line, `"level":"ERROR"`) || strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, "shut")) &&
					!strings.Contains(line, "DURABILITY WARNING") {
					keep = append(keep, line)
				}
			}
			f.t.Logf("replica %d (pid %d) warnings and errors:\n%s", i+1, p.Cmd.Process.Pid, strings.Join(keep, "\n"))
		}
	})
	waitReady(f.t, p.URL)
	f.mu.Lock()
	f.procs[i] = p
	f.all = append(f.all, p)
	f.mu.Unlock()
	return time.Since(began)
}

// stop sends SIGTERM to replica i and waits for its drained exit.
func (f *fleet) stop(i int) {
	f.t.Helper()
	p := f.proc(i)
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		f.t.Fatal(err)
	}
	select {
	case <-p.Exited():
	case <-time.After(60 * time.Second):
		f.t.Fatalf("replica %d did not exit after SIGTERM", i+1)
	}
	if err := p.Cmd.Wait(); err != nil {
		f.t.Fatalf("replica %d's exit after a drain: %v", i+1, err)
	}
}

func waitReady(t *testing.T, url string) {
	t.Helper()
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/readyz not 200 in time (%v)", url, err)
		}
	}
}

// arena is a replica's residency gauges from /metrics.
type arena struct {
	Tenants, Bytes, Peak, Budget, Loads, Evictions int64
}

func scrape(t *testing.T, url string) arena {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a arena
	fields := map[string]*int64{
		"perpetuity_arena_tenants":         &a.Tenants,
		"perpetuity_arena_bytes":           &a.Bytes,
		"perpetuity_arena_peak_bytes":      &a.Peak,
		"perpetuity_arena_budget_bytes":    &a.Budget,
		"perpetuity_arena_loads_total":     &a.Loads,
		"perpetuity_arena_evictions_total": &a.Evictions,
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if p := fields[name]; ok && p != nil {
			v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
			if err != nil {
				t.Fatalf("metric %s: %v", sc.Text(), err)
			}
			*p = int64(v)
		}
	}
	return a
}

// servedTenants is the set of tenants replica p answered a proxied request
// for, from its own access log lines.
func servedTenants(p *rig.Proc) map[int64]bool {
	out := map[int64]bool{}
	for _, line := range strings.Split(p.Log.String(), "\n") {
		var rec struct {
			Msg    string `json:"msg"`
			Tenant int64  `json:"tenant"`
			Status int    `json:"status"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "request" && rec.Tenant != 0 && rec.Status/100 == 2 {
			out[rec.Tenant] = true
		}
	}
	return out
}

// client sends chat turns through the balancer.
type client struct {
	hc *http.Client
	lb string
}

// turn is one non-streamed chat turn by key; it returns the status, the
// reply's text and the request id the serving replica gave it.
func (c *client) turn(ctx context.Context, key, question string) (int, string, string, error) {
	d := harness.OpenAI
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.lb+"/k/"+key+"/v1"+d.Path, bytes.NewReader(d.Body(question, false)))
	if err != nil {
		return 0, "", "", err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range d.Header {
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	rid := resp.Header.Get("X-Perpetuity-Request-Id")
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, "", rid, err
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, &out); err != nil || len(out.Choices) == 0 {
			return resp.StatusCode, "", rid, fmt.Errorf("reply %q: %v", b, err)
		}
		return resp.StatusCode, out.Choices[0].Message.Content, rid, nil
	}
	return resp.StatusCode, string(b), rid, nil
}

// stream is one streamed turn of dialect d, read to its end, and the
// serving replica's request id.
func (c *client) stream(ctx context.Context, key string, d harness.Dialect, question string) (int, harness.Transcript, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.lb+"/k/"+key+"/v1"+d.Path, bytes.NewReader(d.Body(question, true)))
	if err != nil {
		return 0, harness.Transcript{}, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range d.Header {
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, harness.Transcript{}, "", err
	}
	defer resp.Body.Close()
	rid := resp.Header.Get("X-Perpetuity-Request-Id")
	if resp.StatusCode/100 != 2 {
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, harness.Transcript{}, rid, nil
	}
	return resp.StatusCode, harness.ReadStream(d, resp.Body, nil), rid, nil
}

// importBody is one tenant's filler history: conversations of short
// turns, enough that its arena is a measurable share of the budget.
func importBody(tenant, convs, turns int) []byte {
	var b bytes.Buffer
	at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for c := range convs {
		var ts []map[string]string
		for k := range turns {
			role := "user"
			if k%2 == 1 {
				role = "assistant"
			}
			ts = append(ts, map[string]string{"role": role, "at": at.Add(time.Duration(c*turns+k) * time.Minute).Format(time.RFC3339),
				"text": fmt.Sprintf("filler %d of tenant %d: the garden had %d tomatoes and %d peppers on day %d", k, tenant, c+k, c*k, c)})
		}
		line, _ := json.Marshal(map[string]any{"conversation": fmt.Sprintf("filler-%d-%d", tenant, c), "turns": ts})
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func importHistory(ctx context.Context, hc *http.Client, url, key string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/k/"+key+"/perpetuity/import", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("import: %d %s", resp.StatusCode, out)
	}
	return nil
}
