package isolation

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// driver sends the traffic.
type driver struct {
	url     string
	api     *http.Client
	ids     *ids
	led     *ledger
	tenants []*tenant
}

// gen is one generation request: which API, which model, what it asks.
type gen struct {
	kind    string
	dialect string // openai, anthropic, responses
	model   string
	stream  bool
	recall  bool // a probe without the canary: recall must bring it
	// greeting sends the same first message in every tenant with no
	// conversation header: the derived conversation id (a hash of user,
	// system prompt and first message) is then the same in every tenant.
	greeting bool
	tool     string // a memory tool the fake calls in round one
	args     string
	user     string // X-Perpetuity-User, "" for the key's own
	key      int    // 1+index of the key to use in the path; 0 for a random key and placement
}

var topics = []string{
	"the garden beds", "the Lisbon trip", "the quarterly budget", "the vault code for project Heron",
	"the release checklist", "the dentist appointment", "the database migration", "the birthday party",
}

// turnText is one of the tenant's own turns: the same vocabulary in every
// tenant, and the tenant's canary.
func turnText(r *rand.Rand, tn *tenant, nonce, user string) string {
	return fmt.Sprintf("Note %s from %s about %s: item %d is due in %d days. The vault code for project Heron is %s.",
		nonce, user, topics[r.IntN(len(topics))], r.IntN(100), 1+r.IntN(30), tn.canary)
}

const (
	recallQuestion = "What is the vault code for project Heron?"
	greeting       = "Hello! Can you help me with the vault code for project Heron?"
)

// pickKey chooses one of the tenant's keys (a tenant-wide one when the
// request names memory users), and whether it travels in the path or in
// X-Perpetuity-Key.
func pickKey(r *rand.Rand, tn *tenant, names bool) (k key, prefix string, h http.Header) {
	k = tn.keys[r.IntN(len(tn.keys))]
	for names && !k.wide {
		k = tn.keys[r.IntN(len(tn.keys))]
	}
	h = http.Header{}
	if r.IntN(4) == 0 {
		h.Set("X-Perpetuity-Key", k.value)
		return k, "", h
	}
	return k, "/k/" + k.value, h
}

func (d *driver) generate(ctx context.Context, r *rand.Rand, tn *tenant, nonce string, g gen) error {
	k, prefix, h := pickKey(r, tn, g.user != "")
	if g.key > 0 {
		k, prefix, h = tn.keys[g.key-1], "/k/"+tn.keys[g.key-1].value, http.Header{}
	}
	user := k.user
	if g.user != "" {
		user = g.user
		h.Set("X-Perpetuity-User", g.user)
	}
	question := turnText(r, tn, nonce, user)
	switch {
	case g.recall:
		question = recallQuestion + " (" + nonce + ")"
		h.Set("X-Perpetuity-Mode", "probe")
		h.Set("X-Perpetuity-Conversation", "recall-"+nonce)
	case g.greeting:
		question = greeting
	case g.kind == "seed":
		h.Set("X-Perpetuity-Conversation", "shared-conv-0")
	case r.IntN(3) == 0:
		h.Set("X-Perpetuity-Conversation", fmt.Sprintf("shared-conv-%d", r.IntN(5)))
	case r.IntN(2) == 0:
		h.Set("X-Perpetuity-Conversation", "conv-"+nonce)
	}
	if g.tool != "" {
		h.Set(hdrTool, g.tool)
		h.Set(hdrArgs, g.args)
		h.Set("X-Perpetuity-Frame-Budget", "80")
	}
	h.Set(hdrTenant, fmt.Sprint(tn.idx))
	h.Set(hdrReq, nonce)
	h.Set(hdrKind, g.kind)
	h.Set(hdrReply, "Noted "+nonce+": the vault code "+tn.canary+" is kept.")
	h.Set("Content-Type", "application/json")
	const system = "You are a careful assistant."
	var body any
	var path string
	switch g.dialect {
	case "openai":
		path = "/v1/chat/completions"
		cred := "sk-proj-iso"
		if strings.HasPrefix(g.model, "claude") {
			cred = "sk-ant-api03-iso"
		}
		h.Set("Authorization", "Bearer "+cred)
		m := map[string]any{"model": g.model, "messages": []map[string]string{{"role": "system", "content": system}, {"role": "user", "content": question}}}
		if g.stream {
			m["stream"] = true
			m["stream_options"] = map[string]bool{"include_usage": true}
		}
		body = m
	case "anthropic":
		path = "/v1/messages"
		cred := "sk-ant-iso"
		if strings.HasPrefix(g.model, "gpt") {
			cred = "sk-proj-iso"
		}
		h.Set("X-Api-Key", cred)
		h.Set("Anthropic-Version", "2023-06-01")
		body = map[string]any{"model": g.model, "max_tokens": 256, "stream": g.stream, "system": system,
			"messages": []map[string]string{{"role": "user", "content": question}}}
	default:
		path = "/v1/responses"
		h.Set("Authorization", "Bearer sk-proj-iso")
		body = map[string]any{"model": g.model, "stream": g.stream, "instructions": system, "input": question}
	}
	b, _ := json.Marshal(body)
	status, resp, err := d.send(ctx, http.MethodPost, prefix+path, h, b)
	if err != nil {
		return err
	}
	d.led.response(tn.idx, g.kind+" response", resp)
	if status != http.StatusOK {
		return fmt.Errorf("%s: status %d: %.300s", g.kind, status, resp)
	}
	if !strings.Contains(resp, nonce) {
		return fmt.Errorf("%s: the reply lacks its own nonce %s: %.300s", g.kind, nonce, resp)
	}
	return nil
}

func (d *driver) send(ctx context.Context, method, path string, h http.Header, body []byte) (int, string, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, d.url+path, rd)
	if err != nil {
		return 0, "", err
	}
	req.Header = h
	resp, err := d.api.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, string(b), fmt.Errorf("read %s %s: %w", method, path, err)
	}
	return resp.StatusCode, string(b), nil
}

// importLine is one conversation of the JSONL import format.
type importLine struct {
	Conversation string       `json:"conversation"`
	Title        string       `json:"title,omitempty"`
	User         string       `json:"user,omitempty"`
	Turns        []importTurn `json:"turns"`
}

type importTurn struct {
	Role    string `json:"role"`
	Speaker string `json:"speaker,omitempty"`
	Text    string `json:"text"`
	At      string `json:"at"`
}

// importBody is a JSONL body of one or two conversations, some under ids
// every tenant uses.
func importBody(r *rand.Rand, tn *tenant, nonce string) []byte {
	var buf bytes.Buffer
	users := append([]string{""}, sharedUsers...)
	for c := range 1 + r.IntN(2) {
		user := users[r.IntN(len(users))]
		at := time.Now().Add(-time.Duration(1+r.IntN(400)) * 24 * time.Hour).UTC()
		ln := importLine{Conversation: fmt.Sprintf("imp-%s-%d", nonce, c), User: user}
		if r.IntN(3) == 0 {
			ln.Title = "Imported notes " + tn.canary
		}
		for i := range 2 + r.IntN(3) {
			t := importTurn{Role: []string{"user", "assistant"}[i%2], Text: turnText(r, tn, nonce, user), At: at.Add(time.Duration(i) * time.Minute).Format(time.RFC3339)}
			if r.IntN(2) == 0 {
				t.Speaker = "Keeper " + tn.canary
			}
			ln.Turns = append(ln.Turns, t)
		}
		b, _ := json.Marshal(ln)
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

func (d *driver) importHTTP(ctx context.Context, r *rand.Rand, tn *tenant, nonce string) error {
	_, prefix, h := pickKey(r, tn, true) // import lines name users
	h.Set("Content-Type", "application/x-ndjson")
	status, resp, err := d.send(ctx, http.MethodPost, prefix+"/perpetuity/import", h, importBody(r, tn, nonce))
	if err != nil {
		return err
	}
	d.led.response(tn.idx, "import response", resp)
	if status != http.StatusOK {
		return fmt.Errorf("import: status %d: %.300s", status, resp)
	}
	return nil
}

// passthrough calls a route the proxy relays unchanged.
func (d *driver) passthrough(ctx context.Context, r *rand.Rand, tn *tenant, nonce string) (string, error) {
	_, prefix, h := pickKey(r, tn, false)
	h.Set(hdrTenant, fmt.Sprint(tn.idx))
	h.Set(hdrReq, nonce)
	text := turnText(r, tn, nonce, "")
	var method, path, kind string
	var body []byte
	switch r.IntN(4) {
	case 0:
		kind, method, path = "models", http.MethodGet, "/v1/models"
		h.Set("Authorization", "Bearer sk-proj-iso")
	case 1:
		kind, method, path = "model", http.MethodGet, "/v1/models/gpt-4o-mini"
		h.Set("Authorization", "Bearer sk-proj-iso")
	case 2:
		kind, method, path = "count_tokens", http.MethodPost, "/v1/messages/count_tokens"
		h.Set("X-Api-Key", "sk-ant-iso")
		h.Set("Anthropic-Version", "2023-06-01")
		body, _ = json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "messages": []map[string]string{{"role": "user", "content": text}}})
	default:
		kind, method, path = "embeddings", http.MethodPost, "/v1/embeddings"
		h.Set("Authorization", "Bearer sk-proj-iso")
		body, _ = json.Marshal(map[string]any{"model": "text-embedding-3-small", "input": text})
	}
	kind = "passthrough " + kind
	h.Set(hdrKind, kind)
	if body != nil {
		h.Set("Content-Type", "application/json")
	}
	status, resp, err := d.send(ctx, method, prefix+path, h, body)
	if err != nil {
		return kind, err
	}
	d.led.response(tn.idx, kind+" response", resp)
	if status != http.StatusOK {
		return kind, fmt.Errorf("%s: status %d: %.300s", kind, status, resp)
	}
	return kind, nil
}

// toolGen picks a memory tool call; chain and search sometimes name another
// tenant's item or conversation, which must find nothing.
func (d *driver) toolGen(r *rand.Rand, tn *tenant) gen {
	g := gen{dialect: []string{"openai", "anthropic"}[r.IntN(2)], stream: r.IntN(2) == 0}
	g.model = map[string]string{"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5"}[g.dialect]
	if r.IntN(4) == 0 { // across dialects
		g.model = map[string]string{"openai": "claude-sonnet-4-5", "anthropic": "gpt-4o-mini"}[g.dialect]
	}
	owner := tn
	if r.IntN(2) == 0 {
		owner = d.foreignTenant(r, tn)
	}
	whose := "own"
	if owner != tn {
		whose = "foreign"
	}
	switch r.IntN(4) {
	case 0:
		g.tool, g.args = "memory_search", `{"query":"vault code project Heron","limit":20}`
		if conv, err := d.ids.pick(r, "convs", owner.id); err == nil && r.IntN(2) == 0 {
			g.args = fmt.Sprintf(`{"query":"vault code project Heron","conversation":%d,"limit":20}`, conv)
			g.kind = "tool memory_search in " + whose + " conversation"
		}
	case 1:
		g.tool, g.args = "memory_reopen", `{"limit":50}`
	case 2:
		// The chain follows the asker's own turns only: an own item is
		// picked from the asking user's, so the chain has something to
		// find; a foreign one is any item of the other tenant.
		g.user = sharedUsers[r.IntN(2)] // alice and bob hold turns from the set-up
		if owner == tn && r.IntN(2) == 0 {
			g.user = "bob" // his notes outrun the 80-token frame
		}
		item, err := d.ids.pick(r, "items", owner.id)
		if owner == tn {
			item, err = d.ids.userItem(r, tn.id, g.user)
		}
		if err != nil {
			item = 1
		}
		g.tool, g.args = "memory_chain", fmt.Sprintf(`{"item":%d,"direction":"around","depth":5}`, item)
		g.kind = "tool memory_chain on " + whose + " item"
	default:
		by := []string{"conversation", "month", "speaker"}[r.IntN(3)]
		g.tool, g.args = "memory_count", fmt.Sprintf(`{"query":"vault code Heron","by":%q,"examples":3}`, by)
	}
	if g.kind == "" {
		g.kind = "tool " + g.tool
	}
	if g.user == "" && r.IntN(3) == 0 {
		g.user = sharedUsers[r.IntN(len(sharedUsers))]
	}
	return g
}

func (d *driver) foreignTenant(r *rand.Rand, tn *tenant) *tenant {
	f := d.tenants[r.IntN(len(d.tenants)-1)]
	if f.idx >= tn.idx {
		f = d.tenants[f.idx+1]
	}
	return f
}

// apiGen picks a plain generation request over every dialect pair.
func apiGen(r *rand.Rand, tn *tenant) gen {
	g := gen{stream: r.IntN(2) == 0}
	mode := map[bool]string{false: "json", true: "stream"}[g.stream]
	switch r.IntN(6) {
	case 0, 1:
		g.dialect, g.model = "openai", "gpt-4o-mini"
	case 2, 3:
		g.dialect, g.model = "anthropic", "claude-sonnet-4-5"
	case 4:
		g.dialect, g.model = "responses", "gpt-4.1-mini"
	default:
		if r.IntN(2) == 0 {
			g.dialect, g.model = "openai", "claude-sonnet-4-5"
		} else {
			g.dialect, g.model = "anthropic", "gpt-4o-mini"
		}
	}
	g.kind = fmt.Sprintf("%s %s %s", g.dialect, provider(g.model), mode)
	switch r.IntN(4) {
	case 0:
		g.user = sharedUsers[r.IntN(len(sharedUsers))]
	case 1:
		g.user = tn.opsUser()
	}
	return g
}

func provider(model string) string {
	if strings.HasPrefix(model, "claude") {
		return "to anthropic"
	}
	return "to openai"
}
