// Package importlimits is issue 15, finding 8: the import endpoint against
// the key's rate limits and against clients that leave. An import must take
// one of the key's requests per minute and spend its size in tokens from the
// key's minute and day budgets, so a limited key cannot import without
// bound; a refused import stores nothing; an import whose client hung up
// must stop at the next line boundary, leaving whole lines only, reported
// by line.
package importlimits

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
	"testing"

	"github.com/perpetuity/perpetuity/e2e/rig"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// world is the running server and its database.
type world struct {
	t     *testing.T
	proc  *rig.Proc
	env   []string
	dbURL string
}

func startWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, dbURL: dbtest.New(t)}
	w.env = []string{"DATABASE_URL=" + w.dbURL}
	p, err := rig.Serve(t, w.env)
	if err != nil {
		t.Fatal(err)
	}
	w.proc = p
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log (tail):\n%s", tail(p.Log.String(), 40))
		}
	})
	return w
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// limits sets a tenant's limits with `perpetuity tenant limits`.
func (w *world) limits(tenantID int64, flags ...string) {
	w.t.Helper()
	out, err := rig.CLI(w.t, w.env, append([]string{"tenant", "limits", strconv.FormatInt(tenantID, 10), "--json"}, flags...)...)
	if err != nil {
		w.t.Fatalf("tenant limits %v: %v\n%s", flags, err, out)
	}
}

// count runs one integer-valued query as the database owner.
func (w *world) count(sql string, args ...any) int64 {
	w.t.Helper()
	n, err := rig.Scalar(context.Background(), w.dbURL, sql, args...)
	if err != nil {
		w.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// answer is the import endpoint's reply.
type answer struct {
	status int
	retry  int // Retry-After in whole seconds; 0 when absent
	body   []byte
	// The fields of a success or of the import's own error body.
	Conversations int `json:"conversations"`
	Turns         int `json:"turns"`
	Duplicates    int `json:"duplicates"`
	Error         struct {
		Message string `json:"message"`
		Line    int    `json:"line"`
	} `json:"error"`
	Message string `json:"message"` // an echo HTTP error (key resolution, admission)
}

// importBody posts body to the key's import endpoint.
func (w *world) importBody(ctx context.Context, key string, hdr http.Header, body []byte) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.proc.URL+"/k/"+key+"/perpetuity/import", bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{status: resp.StatusCode, body: b}
	a.retry, _ = strconv.Atoi(resp.Header.Get("Retry-After"))
	if err := json.Unmarshal(b, &a); err != nil {
		return a, fmt.Errorf("import answer %d %q: %w", resp.StatusCode, b, err)
	}
	return a, nil
}

// turnText is the text of one imported turn: exactly size bytes, naming
// its import, line and turn so what is stored can be traced back.
func turnText(tag string, line, turn, size int) string {
	s := fmt.Sprintf("%s L%d T%d ", tag, line, turn)
	for len(s) < size {
		s += "lorem "
	}
	return s[:size]
}

// spec is an import file: lines conversations of perLine turns of size
// bytes each; user, when set, goes on every line.
type spec struct {
	tag                  string
	lines, perLine, size int
	user                 string
}

// tokensPerLine is what the service charges for one line: the bytes of its
// turns' text, four to a token (README, Rate limits).
func (s spec) tokensPerLine() int { return (s.perLine*s.size + 3) / 4 }

func (s spec) convID(line int) string { return fmt.Sprintf("%s-%d", s.tag, line) }

func (s spec) jsonl() []byte {
	type turn struct {
		Role string `json:"role"`
		Text string `json:"text"`
		At   string `json:"at"`
	}
	type line struct {
		Conversation string `json:"conversation"`
		User         string `json:"user,omitempty"`
		Turns        []turn `json:"turns"`
	}
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	enc := json.NewEncoder(bw)
	for l := 1; l <= s.lines; l++ {
		ln := line{Conversation: s.convID(l), User: s.user, Turns: make([]turn, s.perLine)}
		for i := range ln.Turns {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			ln.Turns[i] = turn{Role: role, Text: turnText(s.tag, l, i, s.size), At: "2024-03-01T10:00:00Z"}
		}
		if err := enc.Encode(ln); err != nil {
			panic(err) // strings only
		}
	}
	if err := bw.Flush(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// Queries of what a tenant holds, as the database owner.
const (
	messagesSQL      = `SELECT count(*) FROM messages WHERE tenant_id = $1`
	conversationsSQL = `SELECT count(*) FROM conversations WHERE tenant_id = $1 AND ext_key LIKE $2`
	usersSQL         = `SELECT count(*) FROM memory_users WHERE tenant_id = $1 AND name = $2`
	// brokenLinesSQL counts conversations whose stored turns are not a
	// whole line: a line is a conversation of exactly $2 turns, each with
	// its text.
	brokenLinesSQL = `SELECT count(*) FROM (
		SELECT c.id FROM conversations c
		LEFT JOIN messages m ON m.tenant_id = c.tenant_id AND m.conversation_id = c.id
		WHERE c.tenant_id = $1
		GROUP BY c.id
		HAVING count(m.id) <> $2
		    OR count(m.id) <> count(DISTINCT m.id) FILTER (WHERE EXISTS (
		        SELECT 1 FROM items i WHERE i.tenant_id = m.tenant_id AND i.message_id = m.id))
	) broken`
)
