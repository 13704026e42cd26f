package upstreamsafety

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
)

// hostilePath is a pass-through path a caller writes to reach another
// path at the provider than the one the proxy relays.
type hostilePath struct {
	method, target string
	anthropic      bool
}

// hostilePaths are the traversal, separator and shape attacks, in both
// dialects. Every one must be refused before it reaches the provider.
func hostilePaths() []hostilePath {
	var out []hostilePath
	for _, p := range []string{
		"/v1/..%2F..%2Fadmin", "/v1/models%2F..%2F..%2Fadmin", "/v1/models/..%2f..%2fadmin", "/v1/models%5C..%5Cadmin",
		"/v1/models/%2E%2E/%2e%2e/admin", "/v1/models/../../admin", "/v1/./admin", "/v1/models/..%252F..%252Fadmin",
		"/v1/models%3Finjected=1", "/v1/models%23injected", "/v1/models?x=1#injected", "/v1/models%00admin",
		"/v1/models%0D%0AX-Injected:%201", "/v1/models//admin", "/v1/models/", "/v1/admin", "/v1/models/gpt-4o/admin",
		"/v1/files/..%2Fadmin/content", "/v1/messages/count_tokens%3Finjected=1", "/v1/messages/batches/..%2F..%2Fadmin/results",
		"/v1/organizations/admin",
	} {
		out = append(out, hostilePath{"GET", p, false}, hostilePath{"GET", p, true})
	}
	return append(out,
		hostilePath{"DELETE", "/v1/embeddings", false}, hostilePath{"PUT", "/v1/models", false},
		hostilePath{"DELETE", "/v1/messages/count_tokens", true}, hostilePath{"POST", "/v1/models", true})
}

// TestUpstreamRedirectsAndPaths (issue 15, finding 4): provider redirects
// are never followed nor relayed, caller paths never reach another path at
// the provider, and the documented pass-through endpoints still work
// through the official SDKs.
func TestUpstreamRedirectsAndPaths(t *testing.T) {
	w := startWorld(t)
	repeats := figure.N(6, 1)
	codes := []int{301, 302, 303, 307, 308}

	// The redirect target: another local listener, as an internal service
	// would be. It answers with a page worth stealing.
	sink := newListener(t, func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		_, _ = rw.Write([]byte(`{"internal":"admin secrets"}`))
	})
	var redirects, dialect502, locations, leakedBodies int
	var problems []string
	for rep := range repeats {
		for _, code := range codes {
			w.up.Answer(func(rw http.ResponseWriter, r *http.Request) {
				http.Redirect(rw, r, sink.URL+"/internal/admin?from="+fmt.Sprint(rep), code)
			})
			for _, c := range calls() {
				before := w.up.Count()
				res := w.do(c.method, c.path, c.body, c.headers...)
				if w.up.Count() == before {
					problems = append(problems, fmt.Sprintf("%s: the provider was not asked at all", c.name))
					continue
				}
				redirects++
				if res.Status == http.StatusBadGateway && isDialectError(c.anthropic, res.Body) && strings.Contains(res.Body, "redirect") {
					dialect502++
				} else if len(problems) < 20 {
					problems = append(problems, fmt.Sprintf("%s: provider %d became %d %.200q", c.name, code, res.Status, res.Body))
				}
				if res.Header.Get("Location") != "" {
					locations++
				}
				if strings.Contains(res.Body, "admin secrets") {
					leakedBodies++
				}
			}
		}
	}
	sinkHits := sink.Hits(0)
	withCred := 0
	for _, h := range sinkHits {
		if h.Header.Get("Authorization") != "" || h.Header.Get("X-Api-Key") != "" {
			withCred++
		}
		if len(problems) < 40 {
			problems = append(problems, fmt.Sprintf("redirect followed: %s %s with Authorization %q x-api-key %q, %d body bytes",
				h.Method, h.Path, h.Header.Get("Authorization"), h.Header.Get("X-Api-Key"), len(h.Body)))
		}
	}

	// Hostile pass-through paths, against a provider that answers anything.
	w.up.Answer(w.fake.ServeHTTP)
	paths := hostilePaths()
	var sent, refused, reached int
	for range repeats {
		for _, p := range paths {
			headers := []string{openAIKey}
			if p.anthropic {
				headers = []string{anthropicKey, anthVersion}
			}
			before := w.up.Count()
			res := w.do(p.method, p.target, "", headers...)
			sent++
			for _, h := range w.up.Hits(before) {
				reached++
				if len(problems) < 60 {
					problems = append(problems, fmt.Sprintf("%s %s reached the provider as %s %s?%s", p.method, p.target, h.Method, h.EscapedPath, h.Query))
				}
			}
			if res.Status >= 400 && res.Status < 500 && isDialectError(p.anthropic, res.Body) {
				refused++
			} else if len(problems) < 60 {
				problems = append(problems, fmt.Sprintf("%s %s: %d %.200q, want a 4xx dialect error", p.method, p.target, res.Status, res.Body))
			}
		}
	}

	// What pass-through is for keeps working, through the official SDKs.
	sdkOK, sdkCalls := legitimatePassthrough(t, w)

	pass := dialect502 == redirects && len(sinkHits) == 0 && locations == 0 && leakedBodies == 0 &&
		reached == 0 && refused == sent && sdkOK == sdkCalls
	figure.Record(t, figure.Figure{
		Item: 104, Name: "Upstream redirects and pass-through paths",
		Figure: fmt.Sprintf("%d provider redirects (301/302/303/307/308 on %d routes x %d): followed (hits at the redirect target) %d, with a credential %d, "+
			"Location relayed %d, target's body relayed %d, 502 dialect errors %d/%d; %d hostile pass-through paths: reached the provider %d, "+
			"refused with a 4xx dialect error %d/%d; documented pass-through calls through the official SDKs %d/%d served",
			redirects, len(calls()), repeats, len(sinkHits), withCred, locations, leakedBodies, dialect502, redirects,
			sent, reached, refused, sent, sdkOK, sdkCalls),
		Target: "0 redirects followed, 0 hits at the redirect target, 0 hostile paths reaching the provider, every documented pass-through call served",
		Pass:   pass,
		Details: "Real binary; every provider at one hostile local listener. Redirects: the provider answers each request on every route (chat, " +
			"messages, both streamed, both translated, responses, pass-through models, embeddings, count_tokens, Anthropic models) with 301/302/303/307/308 " +
			"to a second local listener that counts hits and the credentials they carry. Paths (raw HTTP, byte-exact, both dialects): encoded traversal " +
			"(%2F, %2f, %5C, %2E%2E, double-encoded %252F), literal dot segments, %3F and %23 (would become query and fragment), # in the query, %00, " +
			"CR LF, empty segments, undocumented paths (/v1/admin, /v1/organizations/...), too-deep ids, wrong methods. SDK calls: openai-go " +
			"Models.List, Models.Get, Models.Get of a fine-tuned id (escaped colons), Embeddings.New; anthropic-sdk-go Messages.CountTokens, Models.List, Models.Get.",
	})
	if !pass {
		t.Errorf("item 104 missed its target")
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// legitimatePassthrough runs the documented pass-through endpoints through
// the official SDKs and reports how many were served as the provider
// answered them.
func legitimatePassthrough(t *testing.T, w *world) (ok, total int) {
	ctx := context.Background()
	oc := openai.NewClient(ooption.WithBaseURL(w.url+"/k/"+w.key+"/v1"), ooption.WithAPIKey("sk-proj-upstreamsafety"), ooption.WithMaxRetries(0))
	ac := anthropic.NewClient(aoption.WithBaseURL(w.url+"/k/"+w.key), aoption.WithAPIKey("sk-ant-api03-upstreamsafety"), aoption.WithMaxRetries(0))
	check := func(what string, err error, good bool) {
		total++
		if err == nil && good {
			ok++
			return
		}
		t.Errorf("SDK %s through pass-through: %v", what, err)
	}
	page, err := oc.Models.List(ctx)
	check("openai models list", err, err == nil && len(page.Data) > 0)
	m, err := oc.Models.Get(ctx, "gpt-4o")
	check("openai model", err, err == nil && m.ID == "gpt-4o")
	// A fine-tuned id: the SDK escapes nothing here, the fake knows no such
	// model, and the provider's 404 must come back as its own error.
	_, err = oc.Models.Get(ctx, "ft:gpt-4o-mini:acme:x1")
	var oe *openai.Error
	check("openai fine-tuned model (provider 404)", nil, errors.As(err, &oe) && oe.StatusCode == http.StatusNotFound)
	emb, err := oc.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: openai.EmbeddingModelTextEmbedding3Small,
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"hello"}}})
	check("openai embeddings", err, err == nil && len(emb.Data) == 1)
	count, err := ac.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "claude-sonnet-4-5",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("count me"))}})
	check("anthropic count_tokens", err, err == nil && count.InputTokens > 0)
	ap, err := ac.Models.List(ctx, anthropic.ModelListParams{})
	check("anthropic models list", err, err == nil && len(ap.Data) > 0)
	if err == nil && len(ap.Data) > 0 {
		am, err := ac.Models.Get(ctx, ap.Data[0].ID, anthropic.ModelGetParams{})
		check("anthropic model", err, err == nil && am.ID == ap.Data[0].ID)
	}
	return ok, total
}
