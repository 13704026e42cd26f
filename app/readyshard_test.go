package app

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// TestReadyzWithShard: two replicas on one database, shares 1/2 and 2/2,
// each answer /readyz once the tenants of their share are warmed, and each
// holds exactly those: together every tenant, none twice.
func TestReadyzWithShard(t *testing.T) {
	t.Parallel()
	url := dbtest.New(t)
	ctx := context.Background()
	db, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 8 {
		if _, err := db.CreateTenantWith(ctx, fmt.Sprintf("shard-%d", i), "alice", store.TenantOptions{Dict: 1}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := db.Tenants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, tc := range []struct{ shard string }{{"1/2"}, {"2/2"}} {
		sh, err := memory.ParseShard(tc.shard)
		if err != nil {
			t.Fatal(err)
		}
		owned := 0
		for _, tr := range all {
			if sh.Owns(tr.ID) {
				owned++
			}
		}
		if owned == 0 || owned == len(all) {
			t.Fatalf("share %s owns %d of %d tenants: the test needs a split", tc.shard, owned, len(all))
		}
		base := startServe(t, map[string]string{"DATABASE_URL": url, "PERPETUITY_ADDR": "127.0.0.1:0",
			"PERPETUITY_SHARD": tc.shard, "PERPETUITY_ARENA_BUDGET": "64MiB"})
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, body := httpGet(t, base+"/readyz")
			if code == http.StatusOK {
				if !strings.Contains(body, `"arenas":"ok"`) {
					t.Fatalf("share %s: readyz %s", tc.shard, body)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("share %s never ready: %d %s", tc.shard, code, body)
			}
			time.Sleep(50 * time.Millisecond)
		}
		_, metrics := httpGet(t, base+"/metrics")
		for name, want := range map[string]float64{
			"perpetuity_arena_tenants": float64(owned), "perpetuity_arena_loads_total": float64(owned),
			"perpetuity_arena_evictions_total": 0, "perpetuity_arena_budget_bytes": 64 << 20,
		} {
			if got, ok := metricValue(metrics, name); !ok || got != want {
				t.Errorf("share %s: %s = %v (found %v), want %v", tc.shard, name, got, ok, want)
			}
		}
		total += owned
	}
	if total != len(all) {
		t.Fatalf("the shares hold %d tenants of %d", total, len(all))
	}
}

// startServe runs `perpetuity serve` with vars until the test ends and
// returns its base URL.
func startServe(t *testing.T, vars map[string]string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	e := env{getenv: func(k string) string { return vars[k] }, stdin: strings.NewReader(""), stdout: io.Discard, stderr: pw}
	done := make(chan error, 1)
	go func() { done <- run(ctx, e, []string{"serve"}); pw.Close() }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "perpetuity serving" {
				addr <- rec.Addr
			}
		}
	}()
	select {
	case a := <-addr:
		return "http://" + a
	case err := <-done:
		t.Fatalf("serve ended: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start")
	}
	return ""
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metricValue reads an unlabelled sample from Prometheus text.
func metricValue(text, name string) (float64, bool) {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}
