// Package ratelimit is issue 9, item 12: per-key request and token limits,
// set per tenant with `perpetuity tenant limits` (or the service defaults),
// enforced by the real binary and seen through the official SDKs. Every
// request over a limit must be a 429 with Retry-After and the rate-limit
// error of the caller's dialect, store nothing and never reach the
// provider; the configured number of requests must get through; a spent
// token budget must refuse the next request; a changed limit must take
// effect within seconds.
package ratelimit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
	"github.com/perpetuity/perpetuity/e2e/rig"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// markUsage in a request's last user message makes the fake report
// usageIn + usageOut tokens for its reply.
const (
	markUsage = "[[usage]]"
	usageIn   = 1200
	usageOut  = 300
	spend     = usageIn + usageOut
	tpm       = 1000 // a reply of spend tokens puts the key 500 in debt
	tpd       = 2000 // two replies of spend tokens use the day up
)

// world is the running server, its fake provider and its database.
type world struct {
	t     *testing.T
	proc  *rig.Proc
	fake  *fakeprovider.Provider
	env   []string
	dbURL string
}

func startWorld(t *testing.T, rpm int) *world {
	t.Helper()
	fake := fakeprovider.New()
	fake.SetDefault(func(r fakeprovider.Recorded) fakeprovider.Reply {
		if bytes.Contains(r.Body, []byte(markUsage)) {
			return fakeprovider.Reply{Text: "a costly answer", Usage: &fakeprovider.Usage{InputTokens: usageIn, OutputTokens: usageOut}}
		}
		return fakeprovider.Reply{}
	})
	fs := httptest.NewServer(fake)
	t.Cleanup(fs.Close)
	w := &world{t: t, fake: fake, dbURL: dbtest.New(t)}
	w.env = []string{
		"DATABASE_URL=" + w.dbURL,
		"PERPETUITY_OPENAI_BASE_URL=" + fs.URL + "/v1",
		"PERPETUITY_ANTHROPIC_BASE_URL=" + fs.URL,
		"PERPETUITY_KEY_RPM=" + strconv.Itoa(rpm),
	}
	p, err := rig.Serve(t, w.env)
	if err != nil {
		t.Fatal(err)
	}
	w.proc = p
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", p.Log.String())
		}
	})
	return w
}

// limitsOut is `perpetuity tenant limits --json`.
type limitsOut struct {
	RPM    int    `json:"requests_per_minute"`
	TPM    int    `json:"tokens_per_minute"`
	TPD    int64  `json:"tokens_per_day"`
	Source string `json:"source"`
}

// limits runs the limits command for a tenant.
func (w *world) limits(tenantID int64, flags ...string) limitsOut {
	w.t.Helper()
	out, err := rig.CLI(w.t, w.env, append([]string{"tenant", "limits", strconv.FormatInt(tenantID, 10), "--json"}, flags...)...)
	if err != nil {
		w.t.Fatalf("tenant limits %v: %v\n%s", flags, err, out)
	}
	var l limitsOut
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		w.t.Fatalf("tenant limits output %q: %v", out, err)
	}
	return l
}

// recorded waits until the tenant has n request records. A record is
// written after its reply's capture and token charge, so the key's counts
// are complete once it is there.
func (w *world) recorded(tenantID int64, n int64) {
	w.t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := rig.Scalar(ctx, w.dbURL, `SELECT count(*) FROM requests WHERE tenant_id = $1`, tenantID)
		if err != nil {
			w.t.Fatal(err)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("tenant %d: %d of %d requests recorded", tenantID, got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// outcome is what an official SDK made of one request.
type outcome struct {
	ok      bool
	status  int
	retry   int    // Retry-After in seconds; 0 when absent or not a whole number
	errType string // OpenAI error.type, Anthropic error.type
	code    string // OpenAI error.code
	raw     string // the error body
	err     error  // anything that is not an API error
}

// dialect sends one request through its SDK.
type dialect struct {
	name      string
	anthropic bool
	send      func(ctx context.Context, w *world, key, text string, stream bool) outcome
}

func openAIClient(w *world, key string) openai.Client {
	return openai.NewClient(ooption.WithBaseURL(w.proc.URL+"/k/"+key+"/v1"), ooption.WithAPIKey("sk-proj-ratelimit"), ooption.WithMaxRetries(0))
}

func fromOpenAI(err error) outcome {
	if err == nil {
		return outcome{ok: true, status: http.StatusOK}
	}
	var ae *openai.Error
	if !errors.As(err, &ae) {
		return outcome{err: err}
	}
	o := outcome{status: ae.StatusCode, errType: ae.Type, code: ae.Code, raw: ae.RawJSON()}
	if ae.Response != nil {
		o.retry, _ = strconv.Atoi(ae.Response.Header.Get("Retry-After"))
	}
	return o
}

func fromAnthropic(err error) outcome {
	if err == nil {
		return outcome{ok: true, status: http.StatusOK}
	}
	var ae *anthropic.Error
	if !errors.As(err, &ae) {
		return outcome{err: err}
	}
	o := outcome{status: ae.StatusCode, errType: string(ae.Type()), raw: ae.RawJSON()}
	if ae.Response != nil {
		o.retry, _ = strconv.Atoi(ae.Response.Header.Get("Retry-After"))
	}
	return o
}

var dialects = []dialect{
	{"openai-chat", false, func(ctx context.Context, w *world, key, text string, stream bool) outcome {
		c := openAIClient(w, key)
		p := openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}}
		if !stream {
			_, err := c.Chat.Completions.New(ctx, p)
			return fromOpenAI(err)
		}
		st := c.Chat.Completions.NewStreaming(ctx, p)
		for st.Next() {
		}
		return fromOpenAI(st.Err())
	}},
	{"anthropic-messages", true, func(ctx context.Context, w *world, key, text string, stream bool) outcome {
		c := anthropic.NewClient(aoption.WithBaseURL(w.proc.URL+"/k/"+key), aoption.WithAPIKey("sk-ant-ratelimit"), aoption.WithMaxRetries(0))
		p := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))}}
		if !stream {
			_, err := c.Messages.New(ctx, p)
			return fromAnthropic(err)
		}
		st := c.Messages.NewStreaming(ctx, p)
		for st.Next() {
		}
		return fromAnthropic(st.Err())
	}},
	{"openai-responses", false, func(ctx context.Context, w *world, key, text string, stream bool) outcome {
		c := openAIClient(w, key)
		p := responses.ResponseNewParams{Model: "gpt-4o-mini", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(text)}}
		if !stream {
			_, err := c.Responses.New(ctx, p)
			return fromOpenAI(err)
		}
		st := c.Responses.NewStreaming(ctx, p)
		for st.Next() {
		}
		return fromOpenAI(st.Err())
	}},
}

// rateLimited reports whether o is the dialect's rate-limit error for the
// kind of limit (OpenAI's type: requests or tokens), with a usable
// Retry-After.
func rateLimited(d dialect, o outcome, kind string) bool {
	if o.status != http.StatusTooManyRequests || o.retry < 1 {
		return false
	}
	if d.anthropic {
		return o.errType == "rate_limit_error" && strings.Contains(o.raw, `"type":"error"`)
	}
	return o.errType == kind && o.code == "rate_limit_exceeded"
}

// tally is one dialect's request-limit run.
type tally struct {
	sent, allowed, refused, wellFormed int
	firstAllowed                       bool // the first rpm requests all went through
	maxAllowed                         int  // rpm plus what refilled during the run
	retryMin, retryMax                 int
	leakedStored, leakedForwarded      int // refused requests' markers found stored / at the provider
}

// marker names request i of a run so refused ones can be looked for.
func marker(run string, i int) string { return fmt.Sprintf("<%s#%d>", run, i) }

func TestRateLimits(t *testing.T) {
	rpm := figure.N(30, 4)
	extra := figure.N(30, 3)
	w := startWorld(t, rpm)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// Requests per minute, in each dialect: the first tenant relies on the
	// service default (PERPETUITY_KEY_RPM), the others set theirs.
	tallies := map[string]*tally{}
	var liftedAfter time.Duration
	for i, d := range dialects {
		nt := rig.CreateTenant(t, w.env, "ratelimit "+d.name)
		if i == 0 {
			if l := w.limits(nt.TenantID); l.Source != "defaults" || l.RPM != rpm {
				t.Fatalf("%s: a tenant without limits shows %+v, want the default %d rpm", d.name, l, rpm)
			}
		} else if l := w.limits(nt.TenantID, "--rpm", strconv.Itoa(rpm)); l.Source != "tenant" || l.RPM != rpm {
			t.Fatalf("%s: limits set to %+v", d.name, l)
		}
		tl := &tally{firstAllowed: true, retryMin: 1 << 30}
		var refusedMarks []string
		start := time.Now()
		for n := 0; n < rpm+extra; n++ {
			m := marker(d.name, n)
			o := d.send(ctx, w, nt.Key, m+" what did we decide?", n%2 == 1)
			tl.sent++
			switch {
			case o.ok:
				tl.allowed++
			case o.err != nil:
				t.Fatalf("%s request %d: %v", d.name, n, o.err)
			default:
				tl.refused++
				refusedMarks = append(refusedMarks, m)
				if rateLimited(d, o, "requests") {
					tl.wellFormed++
				} else {
					t.Errorf("%s request %d: refusal %d type %q code %q Retry-After %d: %s", d.name, n, o.status, o.errType, o.code, o.retry, o.raw)
				}
				tl.retryMin, tl.retryMax = min(tl.retryMin, o.retry), max(tl.retryMax, o.retry)
			}
			if n < rpm && !o.ok {
				tl.firstAllowed = false
			}
		}
		tl.maxAllowed = rpm + int(time.Since(start).Seconds()*float64(rpm)/60)
		w.recorded(nt.TenantID, int64(tl.allowed))
		stored, err := rig.Stored(ctx, w.dbURL, nt.TenantID)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range refusedMarks {
			for _, s := range stored {
				if strings.Contains(s.Text, m) {
					tl.leakedStored++
				}
			}
			for _, r := range w.fake.Requests() {
				if bytes.Contains(r.Body, []byte(m)) {
					tl.leakedForwarded++
				}
			}
		}
		tallies[d.name] = tl

		// Lifting the limit takes effect within the limits cache's TTL.
		if d.anthropic {
			if l := w.limits(nt.TenantID, "--rpm", "0"); l.RPM != 0 {
				t.Fatalf("lift: %+v", l)
			}
			lifted := time.Now()
			for {
				o := d.send(ctx, w, nt.Key, "after the lift", false)
				if o.ok {
					liftedAfter = time.Since(lifted)
					break
				}
				if o.status != http.StatusTooManyRequests || time.Since(lifted) > 15*time.Second {
					t.Fatalf("the lifted limit still refuses after %v: %d %s", time.Since(lifted), o.status, o.raw)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}

	// Tokens per minute: one reply spends past the limit, the next request
	// is refused on tokens until refill pays the debt.
	type tokenRun struct {
		dialect        string
		refusedOK      bool
		retry          int
		forwardedAfter int
	}
	var tokenRuns []tokenRun
	for _, d := range dialects[:2] {
		nt := rig.CreateTenant(t, w.env, "tokens "+d.name)
		w.limits(nt.TenantID, "--rpm", "0", "--tpm", strconv.Itoa(tpm))
		if o := d.send(ctx, w, nt.Key, markUsage+" a long question", false); !o.ok {
			t.Fatalf("%s: first request under the token limit refused: %d %s", d.name, o.status, o.raw)
		}
		w.recorded(nt.TenantID, 1)
		before := len(w.fake.Requests())
		o := d.send(ctx, w, nt.Key, "and another", true)
		ok := rateLimited(d, o, "tokens")
		if !ok {
			t.Errorf("%s: after %d of %d tokens: %d type %q Retry-After %d: %s", d.name, spend, tpm, o.status, o.errType, o.retry, o.raw)
		}
		// (spend - tpm + 1) tokens refill at tpm a minute.
		want := int(math.Ceil(float64(spend-tpm+1) / tpm * 60))
		if o.retry < want-5 || o.retry > want {
			t.Errorf("%s: token refusal Retry-After %d, want about %d", d.name, o.retry, want)
		}
		tokenRuns = append(tokenRuns, tokenRun{d.name, ok, o.retry, len(w.fake.Requests()) - before})
	}

	// Tokens per day: two replies of spend use up tpd; the third request is
	// refused until UTC midnight.
	nt := rig.CreateTenant(t, w.env, "tokens per day")
	w.limits(nt.TenantID, "--rpm", "0", "--tpd", strconv.Itoa(tpd))
	d := dialects[0]
	for n := 0; n < 2; n++ {
		if o := d.send(ctx, w, nt.Key, markUsage+" day "+strconv.Itoa(n), false); !o.ok {
			t.Fatalf("day quota: request %d refused: %d %s", n, o.status, o.raw)
		}
		w.recorded(nt.TenantID, int64(n+1))
	}
	dayOut := d.send(ctx, w, nt.Key, "past the day's quota", false)
	now := time.Now().UTC()
	toMidnight := int(now.Truncate(24*time.Hour).Add(24*time.Hour).Sub(now).Seconds()) + 1
	dayOK := rateLimited(d, dayOut, "tokens") && dayOut.retry >= toMidnight-10 && dayOut.retry <= toMidnight+1
	if !dayOK {
		t.Errorf("day quota: %d type %q Retry-After %d (midnight in %d s): %s", dayOut.status, dayOut.errType, dayOut.retry, toMidnight, dayOut.raw)
	}

	// The figure.
	pass := true
	var parts, details []string
	sent, allowed, refused, wellFormed, leaks := 0, 0, 0, 0, 0
	for _, d := range dialects {
		tl := tallies[d.name]
		sent, allowed, refused, wellFormed = sent+tl.sent, allowed+tl.allowed, refused+tl.refused, wellFormed+tl.wellFormed
		leaks += tl.leakedStored + tl.leakedForwarded
		ok := tl.firstAllowed && tl.allowed <= tl.maxAllowed && tl.wellFormed == tl.refused && tl.refused > 0 &&
			tl.leakedStored == 0 && tl.leakedForwarded == 0
		if !ok {
			t.Errorf("%s: %+v", d.name, *tl)
		}
		pass = pass && ok
		details = append(details, fmt.Sprintf("%s: %d sent at %d rpm, %d admitted (at most %d with refill during the run), %d refused, Retry-After %d-%d s, %d refused requests found stored, %d at the provider",
			d.name, tl.sent, rpm, tl.allowed, tl.maxAllowed, tl.refused, tl.retryMin, tl.retryMax, tl.leakedStored, tl.leakedForwarded))
	}
	parts = append(parts, fmt.Sprintf("%d/%d admitted at %d rpm per key in 3 dialects (official SDKs, half streamed); %d/%d over-limit requests refused with 429, Retry-After and the dialect's rate-limit error; %d of them stored or forwarded",
		allowed, sent, rpm, wellFormed, refused, leaks))
	tokOK := 0
	for _, r := range tokenRuns {
		if r.refusedOK && r.forwardedAfter == 0 {
			tokOK++
		}
		details = append(details, fmt.Sprintf("tokens per minute, %s: a reply of %d tokens at %d TPM, next request refused=%v (Retry-After %d s), forwarded %d",
			r.dialect, spend, tpm, r.refusedOK, r.retry, r.forwardedAfter))
	}
	parts = append(parts, fmt.Sprintf("token limit refused the next request in %d/%d dialects", tokOK, len(tokenRuns)))
	parts = append(parts, fmt.Sprintf("day quota (%d TPD) refused after %d tokens with Retry-After %d s to UTC midnight", tpd, 2*spend, dayOut.retry))
	parts = append(parts, fmt.Sprintf("a lifted limit took effect after %.1f s", liftedAfter.Seconds()))
	details = append(details, fmt.Sprintf("lifting the anthropic tenant's limit with `perpetuity tenant limits ID --rpm 0`: first request admitted %.2f s later (limits cache 2 s)", liftedAfter.Seconds()))
	details = append(details, "limits are counted in each process: with N replicas a key may get N times its limits")
	pass = pass && tokOK == len(tokenRuns) && dayOK && liftedAfter <= 4*time.Second
	figure.Record(t, figure.Figure{
		Item:    12,
		Name:    "Rate limits and quotas",
		Figure:  strings.Join(parts, "; "),
		Target:  "exactly the configured requests per key per minute admitted; every excess refused with 429, Retry-After and the caller dialect's rate-limit error, storing nothing and never reaching the provider; spent token budgets refuse; a changed limit applies within seconds",
		Pass:    pass,
		Details: strings.Join(details, "\n"),
	})
	if !pass {
		t.Fatal("rate limits missed their target")
	}
}
