package e2e

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := httpClient().Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHealthReadyMetrics: liveness, readiness once arenas are warm, and
// Prometheus metrics that count proxied requests by route template without
// ever carrying a key.
func TestHealthReadyMetrics(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	if code, _ := get(t, s.URL+"/healthz"); code != 200 {
		t.Fatalf("healthz %d", code)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := get(t, s.URL+"/readyz")
		if code == 200 {
			if !strings.Contains(body, `"arenas":"ok"`) || !strings.Contains(body, `"migrations":"ok"`) {
				t.Fatalf("readyz body %s", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never ready: %d %s", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.Fake.Script(fakeprovider.Reply{Text: "fine"})
	openAITurn(false)(t, s, nil, "count this request")
	s.waitStored(2)
	code, body := get(t, s.URL+"/metrics")
	if code != 200 {
		t.Fatalf("metrics %d", code)
	}
	for _, want := range []string{
		`perpetuity_http_requests_total{dialect="openai-chat",method="POST",route="/k/:key/v1/chat/completions",status="200"} 1`,
		`perpetuity_memory_stage_seconds_count{stage="capture"}`,
		`perpetuity_memory_stage_seconds_count{stage="scan"}`,
		`perpetuity_frame_tokens_count 1`,
		`perpetuity_arena_items`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(body, s.Key) || strings.Contains(body, "sk-test-openai") {
		t.Fatal("a key reached the metrics")
	}
}
