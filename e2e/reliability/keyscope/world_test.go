package keyscope

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/e2e/reliability/internal/harness"
	"github.com/perpetuity/perpetuity/e2e/rig"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// Headers the fake provider reads (the proxy passes X-Stainless-* on: README,
// "What crosses to and from the provider"): which memory
// tool to call in round one, with what arguments, and which attempt a
// provider request belongs to.
const (
	hdrTool = "X-Stainless-Ks-Tool"
	hdrArgs = "X-Stainless-Ks-Args"
	hdrReq  = "X-Stainless-Ks-Req"
)

// canaryRE finds the canaries: bob's are what must never reach alice.
var canaryRE = regexp.MustCompile(`KS(BOB|ALICE)[0-9a-f]{12}`)

// world is the running server, its fake provider, its database and the
// tenant's keys: alice's pinned key (the attacker), bob's pinned key and
// a tenant-wide key.
type world struct {
	t      *testing.T
	url    string
	dbURL  string
	env    []string
	fake   *fakeprovider.Provider
	owner  *pgxpool.Pool
	tenant int64
	// keys
	alice, bob, wide string
	aliceScope       string // the scope `tenant create --json` printed
	aliceCanary      string
	bobCanaries      []string
}

// tenantOut is `perpetuity tenant create --json`.
type tenantOut struct {
	TenantID int64  `json:"tenant_id"`
	User     string `json:"user"`
	Key      string `json:"key"`
	Scope    string `json:"scope"`
}

func startWorld(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	fake := fakeprovider.New()
	// Round one of a tool attempt calls the tool; every other reply quotes
	// the canaries the provider was sent, so what reached the provider
	// also comes back in the response.
	fake.SetDefault(func(r fakeprovider.Recorded) fakeprovider.Reply {
		if tool := r.Header.Get(hdrTool); tool != "" && len(harness.ToolResults(r)) == 0 {
			return fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{{Name: tool, Arguments: r.Header.Get(hdrArgs)}}}
		}
		return fakeprovider.Reply{Text: "seen: " + strings.Join(canaryRE.FindAllString(string(r.Body), -1), " ") + "."}
	})
	fs := httptest.NewServer(fake)
	t.Cleanup(fs.Close)
	w := &world{t: t, fake: fake, dbURL: dbtest.New(t)}
	w.env = []string{"DATABASE_URL=" + w.dbURL, "PERPETUITY_OPENAI_BASE_URL=" + fs.URL + "/v1", "PERPETUITY_ANTHROPIC_BASE_URL=" + fs.URL}

	out, err := rig.CLI(t, w.env, "tenant", "create", "--user", "alice", "--json", "keyscope")
	if err != nil {
		t.Fatalf("tenant create: %v\n%s", err, out)
	}
	var nt tenantOut
	if err := json.Unmarshal([]byte(out), &nt); err != nil {
		t.Fatalf("tenant create output %q: %v", out, err)
	}
	w.tenant, w.alice, w.aliceScope = nt.TenantID, nt.Key, nt.Scope

	db, err := store.Open(ctx, w.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	aliceID, err := db.UserByName(ctx, w.tenant, "alice")
	if err != nil {
		t.Fatal(err)
	}
	bobID, err := db.EnsureUser(ctx, w.tenant, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if _, w.bob, err = db.CreateKey(ctx, w.tenant, bobID, "bob's agent"); err != nil {
		t.Fatal(err)
	}
	if _, w.wide, err = db.CreateKeyScoped(ctx, w.tenant, aliceID, "team harness", store.ScopeTenant); err != nil {
		t.Fatal(err)
	}
	// The API user fields become the identity in this tenant, so the
	// pinned key's user field is an attack path too.
	if w.owner, err = pgxpool.New(ctx, w.dbURL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.owner.Close)
	if _, err := w.owner.Exec(ctx, `UPDATE tenants SET user_field_identity = true WHERE id = $1`, w.tenant); err != nil {
		t.Fatal(err)
	}

	p, err := rig.Serve(t, w.env)
	if err != nil {
		t.Fatal(err)
	}
	w.url = p.URL
	t.Cleanup(func() {
		if t.Failed() {
			log := p.Log.String()
			if len(log) > 20000 {
				log = "...\n" + log[len(log)-20000:]
			}
			t.Logf("server log:\n%s", log)
		}
	})
	return w
}

// outcome is what one attempt got back.
type outcome struct {
	status  int
	errType string // OpenAI error.type, Anthropic error.type
	code    string // OpenAI error.code
	body    string // the whole response: JSON, every stream event, or the error body
	err     error  // anything that is not an API answer
}

func (o outcome) ok() bool { return o.err == nil && o.status == http.StatusOK }

func fromOpenAI(body string, err error) outcome {
	if err == nil {
		return outcome{status: http.StatusOK, body: body}
	}
	var ae *openai.Error
	if !errors.As(err, &ae) {
		return outcome{err: err, body: body}
	}
	return outcome{status: ae.StatusCode, errType: ae.Type, code: ae.Code, body: body + ae.RawJSON()}
}

func fromAnthropic(body string, err error) outcome {
	if err == nil {
		return outcome{status: http.StatusOK, body: body}
	}
	var ae *anthropic.Error
	if !errors.As(err, &ae) {
		return outcome{err: err, body: body}
	}
	return outcome{status: ae.StatusCode, errType: string(ae.Type()), body: body + ae.RawJSON()}
}

// call is one request: the key, the user header ("" for none), the user
// field hint ("" for none), the question and the attempt's tag.
type call struct {
	key, user, hint, text, nonce string
	stream                       bool
	tool, args                   string
	conversation                 string
}

func (c call) headers() []string {
	h := []string{hdrReq, c.nonce, "X-Perpetuity-Conversation", c.conversation}
	if c.user != "" {
		h = append(h, "X-Perpetuity-User", c.user)
	}
	if c.tool != "" {
		h = append(h, hdrTool, c.tool, hdrArgs, c.args)
	}
	return h
}

// dialect sends a call through its official SDK.
type dialect struct {
	name      string
	anthropic bool
	send      func(ctx context.Context, w *world, c call) outcome
}

func openAIClient(w *world, c call) openai.Client {
	opts := []ooption.RequestOption{ooption.WithBaseURL(w.url + "/k/" + c.key + "/v1"), ooption.WithAPIKey("sk-proj-keyscope"), ooption.WithMaxRetries(0)}
	h := c.headers()
	for i := 0; i < len(h); i += 2 {
		opts = append(opts, ooption.WithHeader(h[i], h[i+1]))
	}
	return openai.NewClient(opts...)
}

func anthropicClient(w *world, c call) anthropic.Client {
	opts := []aoption.RequestOption{aoption.WithBaseURL(w.url + "/k/" + c.key), aoption.WithAPIKey("sk-ant-keyscope"), aoption.WithMaxRetries(0)}
	h := c.headers()
	for i := 0; i < len(h); i += 2 {
		opts = append(opts, aoption.WithHeader(h[i], h[i+1]))
	}
	return anthropic.NewClient(opts...)
}

var dialects = []dialect{
	{"openai-chat", false, func(ctx context.Context, w *world, c call) outcome {
		cl := openAIClient(w, c)
		p := openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(c.text)}}
		if c.hint != "" {
			p.User = openai.String(c.hint)
		}
		if !c.stream {
			r, err := cl.Chat.Completions.New(ctx, p)
			if err != nil {
				return fromOpenAI("", err)
			}
			return fromOpenAI(r.RawJSON(), nil)
		}
		st := cl.Chat.Completions.NewStreaming(ctx, p)
		var b strings.Builder
		for st.Next() {
			b.WriteString(st.Current().RawJSON())
		}
		return fromOpenAI(b.String(), st.Err())
	}},
	{"anthropic-messages", true, func(ctx context.Context, w *world, c call) outcome {
		cl := anthropicClient(w, c)
		p := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 256,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(c.text))}}
		if c.hint != "" {
			p.Metadata = anthropic.MetadataParam{UserID: anthropic.String(c.hint)}
		}
		if !c.stream {
			r, err := cl.Messages.New(ctx, p)
			if err != nil {
				return fromAnthropic("", err)
			}
			return fromAnthropic(r.RawJSON(), nil)
		}
		st := cl.Messages.NewStreaming(ctx, p)
		var b strings.Builder
		for st.Next() {
			b.WriteString(st.Current().RawJSON())
		}
		return fromAnthropic(b.String(), st.Err())
	}},
	{"openai-responses", false, func(ctx context.Context, w *world, c call) outcome {
		cl := openAIClient(w, c)
		p := responses.ResponseNewParams{Model: "gpt-4o-mini", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(c.text)}}
		if c.hint != "" {
			p.User = openai.String(c.hint)
		}
		if !c.stream {
			r, err := cl.Responses.New(ctx, p)
			if err != nil {
				return fromOpenAI("", err)
			}
			return fromOpenAI(r.RawJSON(), nil)
		}
		st := cl.Responses.NewStreaming(ctx, p)
		var b strings.Builder
		for st.Next() {
			b.WriteString(st.Current().RawJSON())
		}
		return fromOpenAI(b.String(), st.Err())
	}},
}

// importLine is one conversation of the JSONL import format.
type importLine struct {
	Conversation string       `json:"conversation"`
	User         string       `json:"user,omitempty"`
	Turns        []importTurn `json:"turns"`
}

type importTurn struct {
	Role string `json:"role"`
	Text string `json:"text"`
	At   string `json:"at"`
}

func line(conv, user, text string) importLine {
	return importLine{Conversation: conv, User: user, Turns: []importTurn{
		{Role: "user", Text: text, At: "2024-03-04T05:06:07Z"},
		{Role: "assistant", Text: "Noted.", At: "2024-03-04T05:07:07Z"},
	}}
}

// importHTTP posts JSONL to the import route with key and user header.
func (w *world) importHTTP(ctx context.Context, key, user, nonce string, lines ...importLine) outcome {
	var buf bytes.Buffer
	for _, l := range lines {
		b, _ := json.Marshal(l)
		buf.Write(b)
		buf.WriteByte('\n')
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url+"/k/"+key+"/perpetuity/import", &buf)
	if err != nil {
		return outcome{err: err}
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set(hdrReq, nonce)
	if user != "" {
		req.Header.Set("X-Perpetuity-User", user)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return outcome{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return outcome{err: err}
	}
	return outcome{status: resp.StatusCode, body: string(b)}
}

// importRefusal reports whether o is the import route's 403 with its own
// JSON error (Perpetuity's endpoints answer in no provider's dialect):
// {"message": ...} when the key may not act as the header's user,
// {"error": {"message", "line"}} when a line names another user.
func importRefusal(o outcome) bool {
	if o.status != http.StatusForbidden {
		return false
	}
	var e struct {
		Message string `json:"message"`
		Error   struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	return json.Unmarshal([]byte(o.body), &e) == nil && (e.Message != "" || e.Error.Message != "")
}

// permissionRefusal reports whether o is a 403 permission error in the
// dialect's own shape, as its SDK read it.
func permissionRefusal(d dialect, o outcome) bool {
	if o.status != http.StatusForbidden {
		return false
	}
	if d.anthropic {
		return o.errType == "permission_error" && strings.Contains(o.body, `"type":"error"`)
	}
	return o.errType == "invalid_request_error" && o.code == "permission_denied"
}

// upstream is every provider request of one attempt.
func (w *world) upstream(nonce string) []fakeprovider.Recorded {
	var out []fakeprovider.Recorded
	for _, r := range w.fake.Requests() {
		if r.Header.Get(hdrReq) == nonce {
			out = append(out, r)
		}
	}
	return out
}

// bobsIn lists bob's canaries found in s.
func (w *world) bobsIn(s string) []string {
	var out []string
	for _, c := range w.bobCanaries {
		if strings.Contains(s, c) {
			out = append(out, c)
		}
	}
	return out
}

// scalar runs one integer-valued query as the owner.
func (w *world) scalar(ctx context.Context, sql string, args ...any) int64 {
	w.t.Helper()
	var n int64
	if err := w.owner.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		w.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// bobsMessages counts what is stored for bob.
func (w *world) bobsMessages(ctx context.Context) int64 {
	return w.scalar(ctx, `SELECT count(*) FROM messages m JOIN memory_users u ON u.tenant_id = m.tenant_id AND u.id = m.user_id
		WHERE m.tenant_id = $1 AND u.name = 'bob'`, w.tenant)
}

// bobsReplies counts the replies stored in bob's memory.
func (w *world) bobsReplies(ctx context.Context) int64 {
	return w.scalar(ctx, `SELECT count(*) FROM messages m JOIN memory_users u ON u.tenant_id = m.tenant_id AND u.id = m.user_id
		WHERE m.tenant_id = $1 AND u.name = 'bob' AND m.role = 'assistant'`, w.tenant)
}

// convOwner names the memory user of the conversation with this key.
func (w *world) convOwner(ctx context.Context, ext string) string {
	w.t.Helper()
	var name string
	err := w.owner.QueryRow(ctx, `SELECT u.name FROM conversations c JOIN memory_users u ON u.tenant_id = c.tenant_id AND u.id = c.user_id
		WHERE c.tenant_id = $1 AND c.ext_key = $2`, w.tenant, ext).Scan(&name)
	if err != nil {
		return fmt.Sprintf("(no conversation %s: %v)", ext, err)
	}
	return name
}

func canary(who string, i int) string {
	return fmt.Sprintf("KS%s%012x", who, 0xa11ce000+i)
}
