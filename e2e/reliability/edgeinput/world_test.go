// Package edgeinput is issue 15, findings 9, 11 and 12, against the real
// binary: client input PostgreSQL cannot hold (a NUL character, invalid
// UTF-8) must be a 400 in the caller's dialect with nothing stored, never a
// 503 "memory is unavailable"; X-Perpetuity-Frame-Budget must not take a
// frame past PERPETUITY_FRAME_CEILING, nor may a memory tool's result; probe
// mode and Capture: off must create no memory user and no conversation, and
// a key may create only PERPETUITY_KEY_USERS_PER_DAY new users a day.
package edgeinput

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/e2e/rig"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// world is one running server with its own database and fake provider.
type world struct {
	t     *testing.T
	proc  *rig.Proc
	fake  *fakeprovider.Provider
	env   []string
	dbURL string
}

func startWorld(t *testing.T, extraEnv ...string) *world {
	t.Helper()
	fake := fakeprovider.New()
	fs := httptest.NewServer(fake)
	t.Cleanup(fs.Close)
	w := &world{t: t, fake: fake, dbURL: dbtest.New(t)}
	w.env = append([]string{
		"DATABASE_URL=" + w.dbURL,
		"PERPETUITY_OPENAI_BASE_URL=" + fs.URL + "/v1",
		"PERPETUITY_ANTHROPIC_BASE_URL=" + fs.URL,
	}, extraEnv...)
	p, err := rig.Serve(t, w.env)
	if err != nil {
		t.Fatal(err)
	}
	w.proc = p
	t.Cleanup(func() {
		if t.Failed() {
			log := p.Log.String()
			if len(log) > 12000 {
				log = log[len(log)-12000:]
			}
			t.Logf("server log (end):\n%s", log)
		}
	})
	return w
}

// rows are a tenant's memory rows, counted at the database as its owner.
type rows struct {
	Users, Conversations, Messages, Items int64
}

const rowsSQL = `SELECT
	(SELECT count(*) FROM memory_users WHERE tenant_id = $1),
	(SELECT count(*) FROM conversations WHERE tenant_id = $1),
	(SELECT count(*) FROM messages WHERE tenant_id = $1),
	(SELECT count(*) FROM items WHERE tenant_id = $1)`

func (w *world) rows(tenantID int64) rows {
	w.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, w.dbURL)
	if err != nil {
		w.t.Fatal(err)
	}
	defer conn.Close(ctx)
	var r rows
	if err := conn.QueryRow(ctx, rowsSQL, tenantID).Scan(&r.Users, &r.Conversations, &r.Messages, &r.Items); err != nil {
		w.t.Fatal(err)
	}
	return r
}

// exec runs one statement as the database owner.
func (w *world) exec(sql string, args ...any) {
	w.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, w.dbURL)
	if err != nil {
		w.t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		w.t.Fatalf("%s: %v", sql, err)
	}
}

// strings reads one text column as the database owner.
func (w *world) strings(sql string, args ...any) []string {
	w.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, w.dbURL)
	if err != nil {
		w.t.Fatal(err)
	}
	defer conn.Close(ctx)
	rs, err := conn.Query(ctx, sql, args...)
	if err != nil {
		w.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rs, pgx.RowTo[string])
	if err != nil {
		w.t.Fatal(err)
	}
	return out
}

// settled waits until every request the tenant made has been recorded: a
// reply's capture runs after the response went out, and the record after it.
func (w *world) settled(tenantID int64, n int64) {
	w.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := rig.Scalar(context.Background(), w.dbURL, `SELECT count(*) FROM requests WHERE tenant_id = $1`, tenantID)
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

// answer is one raw HTTP exchange.
type answer struct {
	status int
	header http.Header
	body   []byte
	err    error
}

// post sends body (a JSON value, or raw bytes) with the dialect's
// credential headers and h.
func (w *world) post(ctx context.Context, key string, d dialect, h map[string]string, body any) answer {
	raw, ok := body.([]byte)
	if !ok {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return answer{err: err}
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.proc.URL+"/k/"+key+d.path, bytes.NewReader(raw))
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range d.cred {
		req.Header.Set(k, v)
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b.Bytes()}
}

// dialectError reads an error body of the dialect: its type and message,
// and whether it has the dialect's shape.
func dialectError(d dialect, b []byte) (typ, msg string, ok bool) {
	var v struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &v) != nil || v.Error.Message == "" {
		return "", "", false
	}
	if d.anthropic {
		return v.Error.Type, v.Error.Message, v.Type == "error"
	}
	return v.Error.Type, v.Error.Message, v.Type == ""
}

// dialect is one chat route, with the credential its SDK would send.
type dialect struct {
	name      string
	path      string
	anthropic bool
	responses bool
	cred      map[string]string
	model     string
}

var dialects = []dialect{
	{name: "openai-chat", path: "/v1/chat/completions", cred: map[string]string{"Authorization": "Bearer sk-proj-edge"}, model: "gpt-4o-mini"},
	{name: "anthropic-messages", path: "/v1/messages", anthropic: true,
		cred: map[string]string{"X-Api-Key": "sk-ant-edge", "Anthropic-Version": "2023-06-01"}, model: "claude-sonnet-4-5"},
	{name: "openai-responses", path: "/v1/responses", responses: true, cred: map[string]string{"Authorization": "Bearer sk-proj-edge"}, model: "gpt-4o-mini"},
}

// turn is a message of a conversation to send.
type turn struct {
	role, text string
	// toolResult makes the turn a tool exchange: the assistant's call and
	// the tool's result (text), in the dialect's shape.
	toolResult bool
}

// chat is a request to build in a dialect.
type chat struct {
	model   string
	system  string
	history []turn
	live    string
	hint    string // OpenAI "user", Anthropic metadata.user_id
	session string // Responses "conversation"
}

// body renders c in d's wire shape.
func (c chat) body(d dialect) map[string]any {
	model := c.model
	if model == "" {
		model = d.model
	}
	m := map[string]any{"model": model}
	var msgs []any
	switch {
	case d.anthropic:
		m["max_tokens"] = 64
		if c.system != "" {
			m["system"] = c.system
		}
		for i, t := range c.history {
			if t.toolResult {
				id := "toolu_edge_" + string(rune('a'+i))
				msgs = append(msgs,
					map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "read_file", "input": map[string]any{}}}},
					map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": t.text}}},
					map[string]any{"role": "assistant", "content": "read it"})
				continue
			}
			msgs = append(msgs, map[string]any{"role": t.role, "content": t.text})
		}
		msgs = append(msgs, map[string]any{"role": "user", "content": c.live})
		m["messages"] = msgs
		if c.hint != "" {
			m["metadata"] = map[string]any{"user_id": c.hint}
		}
	case d.responses:
		if c.system != "" {
			m["instructions"] = c.system
		}
		for i, t := range c.history {
			if t.toolResult {
				id := "call_edge_" + string(rune('a'+i))
				msgs = append(msgs,
					map[string]any{"type": "function_call", "call_id": id, "name": "read_file", "arguments": "{}"},
					map[string]any{"type": "function_call_output", "call_id": id, "output": t.text},
					map[string]any{"role": "assistant", "content": "read it"})
				continue
			}
			msgs = append(msgs, map[string]any{"role": t.role, "content": t.text})
		}
		msgs = append(msgs, map[string]any{"role": "user", "content": c.live})
		m["input"] = msgs
		if c.hint != "" {
			m["user"] = c.hint
		}
		if c.session != "" {
			m["conversation"] = c.session
		}
	default:
		if c.system != "" {
			msgs = append(msgs, map[string]any{"role": "system", "content": c.system})
		}
		for i, t := range c.history {
			if t.toolResult {
				id := "call_edge_" + string(rune('a'+i))
				msgs = append(msgs,
					map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
						"id": id, "type": "function", "function": map[string]any{"name": "read_file", "arguments": "{}"}}}},
					map[string]any{"role": "tool", "tool_call_id": id, "content": t.text},
					map[string]any{"role": "assistant", "content": "read it"})
				continue
			}
			msgs = append(msgs, map[string]any{"role": t.role, "content": t.text})
		}
		msgs = append(msgs, map[string]any{"role": "user", "content": c.live})
		m["messages"] = msgs
		if c.hint != "" {
			m["user"] = c.hint
		}
	}
	return m
}

// forwardedWith counts the provider requests whose body holds marker.
func (w *world) forwardedWith(marker string) int {
	n := 0
	for _, r := range w.fake.Requests() {
		if bytes.Contains(r.Body, []byte(marker)) || strings.Contains(string(r.Body), jsonEscaped(marker)) {
			n++
		}
	}
	return n
}

func jsonEscaped(s string) string {
	b, _ := json.Marshal(s)
	return strings.Trim(string(b), `"`)
}
