package secrets

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/e2e/reliability/internal/harness"
	"github.com/perpetuity/perpetuity/e2e/rig"
)

// chunk is one searchable piece of a place, with a label for the report.
type chunk struct {
	label string
	data  []byte
}

// columnsSQL lists every column of every ordinary table outside the system
// schemas: the dump must cover tables added after this test was written.
const columnsSQL = `SELECT c.table_schema, c.table_name, c.column_name, c.data_type
FROM information_schema.columns c
JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
WHERE t.table_type = 'BASE TABLE' AND c.table_schema NOT IN ('pg_catalog', 'information_schema')
ORDER BY c.table_schema, c.table_name, c.ordinal_position`

// seesEverythingSQL: the dump runs as a role that row-level security cannot
// hide rows from (a superuser or a BYPASSRLS role); otherwise "nothing
// found" would prove nothing.
const seesEverythingSQL = `SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user`

// dumpDatabase reads every value of every column of every table: bytea
// as raw bytes, everything else (text, jsonb, arrays, ...) as its text form.
func dumpDatabase(ctx context.Context, t *testing.T, dbURL string) (chunks []chunk, tables, values int) {
	t.Helper()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var all bool
	if err := conn.QueryRow(ctx, seesEverythingSQL).Scan(&all); err != nil || !all {
		t.Fatalf("database dump: the connecting role must bypass row-level security (got %v, %v)", all, err)
	}
	type column struct{ Schema, Table, Column, Type string }
	rows, err := conn.Query(ctx, columnsSQL)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := pgx.CollectRows(rows, pgx.RowToStructByPos[column])
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range cols {
		tbl := pgx.Identifier{c.Schema, c.Table}.Sanitize()
		seen[tbl] = true
		col := pgx.Identifier{c.Column}.Sanitize()
		// Identifiers come from the catalog and are quoted by pgx: this is
		// the one place SQL is assembled, because the table list is the
		// database's, not the test's.
		q := "SELECT " + col + "::text FROM " + tbl + " WHERE " + col + " IS NOT NULL"
		if c.Type == "bytea" {
			q = "SELECT " + col + " FROM " + tbl + " WHERE " + col + " IS NOT NULL"
		}
		r, err := conn.Query(ctx, q)
		if err != nil {
			t.Fatalf("dump %s.%s: %v", tbl, col, err)
		}
		vals, err := pgx.CollectRows(r, pgx.RowTo[[]byte])
		if err != nil {
			t.Fatalf("dump %s.%s: %v", tbl, col, err)
		}
		var buf bytes.Buffer
		for _, v := range vals {
			buf.Write(v)
			buf.WriteByte(0)
		}
		values += len(vals)
		chunks = append(chunks, chunk{label: c.Table + "." + c.Column, data: buf.Bytes()})
	}
	return chunks, len(seen), values
}

// console is a browser stand-in for the real binary's console: cookies,
// no redirects followed, the last CSRF token a page carried.
type console struct {
	t    *testing.T
	base string
	http *http.Client
	csrf string
}

func newConsole(t *testing.T, base string) *console {
	jar, _ := cookiejar.New(nil)
	return &console{t: t, base: base, http: &http.Client{
		Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// page is one console answer.
type page struct {
	path   string
	status int
	header http.Header
	body   []byte
}

func (p page) text() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d %s\n", p.status, p.path)
	for k, vs := range p.header {
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	b.Write(p.body)
	return b.Bytes()
}

func (c *console) get(path string) page { return c.send(http.MethodGet, path, nil) }

// post sends a form with the current CSRF token.
func (c *console) post(path string, form url.Values) page {
	if form == nil {
		form = url.Values{}
	}
	form.Set("_csrf", c.csrf)
	return c.send(http.MethodPost, path, form)
}

func (c *console) send(method, path string, form url.Values) page {
	c.t.Helper()
	a, err := harness.ConsoleDo(context.Background(), c.http, method, c.base+path, form)
	if err != nil {
		c.t.Fatal(err)
	}
	if a.CSRF != "" {
		c.csrf = a.CSRF
	}
	return page{path: path, status: a.Status, header: a.Header, body: a.Body}
}

// signIn signs in with the form, as a browser would.
func (c *console) signIn(email, password string) {
	c.t.Helper()
	c.get("/signin")
	p := c.post("/signin", url.Values{"email": {email}, "password": {password}})
	if p.status != http.StatusSeeOther {
		c.t.Fatalf("sign in %s: status %d: %s", email, p.status, truncate(p.body, 300))
	}
}

// crawl reads every console page reachable by links from the start pages,
// up to limit pages.
func (c *console) crawl(limit int, start ...string) []page {
	queue := append([]string(nil), start...)
	seen := map[string]bool{}
	var out []page
	for len(queue) > 0 && len(out) < limit {
		path := queue[0]
		queue = queue[1:]
		if seen[path] {
			continue
		}
		seen[path] = true
		p := c.get(path)
		out = append(out, p)
		doc, err := goquery.NewDocumentFromReader(bytes.NewReader(p.body))
		if err != nil {
			continue
		}
		doc.Find("a[href]").Each(func(_ int, s *goquery.Selection) {
			href, _ := s.Attr("href")
			if u, err := url.Parse(href); err == nil && u.Host == "" && strings.HasPrefix(u.Path, "/console") && !seen[href] {
				queue = append(queue, href)
			}
		})
	}
	return out
}

// createPlatformAdmin runs `perpetuity admin create`, password on stdin.
func createPlatformAdmin(t *testing.T, env []string, email, password string) {
	t.Helper()
	cmd := exec.Command(rig.Binary(t), "admin", "create", email)
	cmd.Env = append(cmd.Environ(), env...)
	cmd.Stdin = strings.NewReader(password + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("admin create: %v\n%s", err, out)
	}
}
