package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/perpetuity/perpetuity/app"
	"github.com/perpetuity/perpetuity/memory/importer"
	"github.com/perpetuity/perpetuity/memory/importer/locomo"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/proxy"
)

// The eval's side of the wire: the real server started in-process, and the
// requests that fill it and ask it.

// startEvalServer runs the real server on a loopback port with upstream as
// its OpenAI base URL, and returns its base URL and a stop function.
func startEvalServer(ctx context.Context, e env, openAIBase string) (string, func(), error) {
	u, err := databaseURL(ctx, e)
	if err != nil {
		return "", nil, err
	}
	getenv := func(k string) string {
		switch k {
		case "DATABASE_URL":
			return u
		case "PERPETUITY_ADDR":
			return "127.0.0.1:0"
		case "PERPETUITY_OPENAI_BASE_URL":
			return openAIBase
		case "PERPETUITY_LOG_LEVEL":
			return "warn"
		}
		return e.getenv(k)
	}
	cfg, err := app.LoadConfig(getenv)
	if err != nil {
		return "", nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	ready := make(chan string, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- app.Serve(sctx, cfg, e.stderr, func(a string) { ready <- a })
	}()
	select {
	case addr := <-ready:
		stop := func() {
			cancel()
			if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
				fmt.Fprintf(e.stderr, "eval: server: %v\n", err)
			}
		}
		return "http://" + addr, stop, nil
	case err := <-errc:
		cancel()
		return "", nil, fmt.Errorf("start server: %w", err)
	case <-ctx.Done():
		cancel()
		<-errc
		return "", nil, ctx.Err()
	}
}

// importSamples posts each sample's sessions to the import endpoint.
func importSamples(ctx context.Context, client *http.Client, url string, samples []locomo.Sample, bar *progress) (importer.Result, error) {
	var total importer.Result
	for i := range samples {
		bar.update("import", i, len(samples))
		var body bytes.Buffer
		if err := locomo.WriteJSONL(&body, samples[i].Conversations()); err != nil {
			return total, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, &body)
		if err != nil {
			return total, err
		}
		req.Header.Set("Content-Type", "application/x-ndjson")
		resp, err := client.Do(req)
		if err != nil {
			return total, fmt.Errorf("import %s: %w", samples[i].ID, err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return total, fmt.Errorf("import %s: %s: %s", samples[i].ID, resp.Status, bytes.TrimSpace(b))
		}
		var r importer.Result
		if err := json.Unmarshal(b, &r); err != nil {
			return total, fmt.Errorf("import %s: answer %q: %w", samples[i].ID, b, err)
		}
		total.Conversations += r.Conversations
		total.Turns += r.Turns
		total.Duplicates += r.Duplicates
	}
	bar.update("import", len(samples), len(samples))
	bar.done()
	return total, nil
}

// askAll runs ask(i) for i in [0, n), concurrency at a time; the first
// failure stops the rest.
func askAll(ctx context.Context, what string, n, concurrency int, bar *progress, ask func(context.Context, int) error) error {
	if n == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	var done atomic.Int64
	for w := 0; w < concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if err := ask(ctx, i); err != nil {
					once.Do(func() { firstErr = err; cancel() })
					continue
				}
				bar.update(what, int(done.Add(1)), n)
			}
		}()
	}
feed:
	for i := range n {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	bar.done()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// warmUp asks one unscored question per user, one at a time, so each
// user's probe conversation exists before concurrent probes name it: the
// store's find-or-create of a conversation can fail when two requests
// create the same one at once.
func warmUp(ctx context.Context, client *http.Client, url string, samples []locomo.Sample) error {
	for i := range samples {
		p := probe{sample: samples[i].ID, question: "Hello?"}
		if err := ask(ctx, client, url, &p, "", -1, false); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	return nil
}

// ask sends one probe in probe mode, tagged for the fake provider with
// header: i; with tools false the memory tools are off.
func ask(ctx context.Context, client *http.Client, url string, p *probe, header string, i int, tools bool) error {
	body, err := json.Marshal(map[string]any{
		"model":      "gpt-4o-mini",
		"max_tokens": 16,
		"messages":   []map[string]string{{"role": "user", "content": p.question}},
	})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("Authorization", "Bearer sk-eval-fake")
	h.Set(proxy.HeaderMode, "probe")
	// The frame is measured on its own unless tool reach is: with the tools
	// on, labels carry turn ids and the upstream request carries tool
	// definitions.
	if !tools {
		h.Set(proxy.HeaderTools, "off")
	}
	h.Set(proxy.HeaderUser, p.sample)
	// One empty conversation per user to ask from, so probes do not each
	// leave a conversation row behind.
	h.Set(proxy.HeaderConversation, "eval-probe")
	if p.budget > 0 {
		h.Set(proxy.HeaderFrameBudget, strconv.Itoa(p.budget))
	}
	if i >= 0 {
		h.Set(clientRequestID, header+strconv.Itoa(i))
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("ask %q: %w", p.question, err)
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ask %q (budget %d): %s: %s", p.question, p.budget, resp.Status, bytes.TrimSpace(b))
	}
	return nil
}

// waitChain returns once the chain writer's watermark reached the tenant's head.
func waitChain(ctx context.Context, db *store.DB, tenantID int64) error {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		head, err := db.ReadHead(ctx, tenantID)
		if err != nil {
			return err
		}
		at, err := db.ChainHead(ctx, tenantID)
		if err != nil {
			return err
		}
		if at >= head.Seq {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the chain graph's writer is at %d of %d after five minutes", at, head.Seq)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
