package isolation

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// sharedUsers are memory user names every tenant has: a lookup by name
// that forgot the tenant would cross.
var sharedUsers = []string{"alice", "bob", "carol"}

// key is one Perpetuity key and the memory user it is bound to. The
// sign-up key is pinned to its user; the keys the test adds are
// tenant-wide, so traffic may name the tenant's other users through them.
type key struct {
	value string
	user  string
	wide  bool
}

// tenant is one signed-up team.
type tenant struct {
	idx    int
	id     int64
	hex    string // the canary's random part; what the scans look for
	canary string // "canary-t07-<hex>"
	team   string
	email  string
	keys   []key
	seeded []string // memory users that hold the vault-code fact from the set-up
	con    *console
}

// opsUser is the tenant's own user whose name carries the canary, so a
// foreign user list on any page shows up as a leak.
func (tn *tenant) opsUser() string { return "ops-" + tn.canary }

func newTenant(idx int) *tenant {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	h := hex.EncodeToString(b)
	tn := &tenant{idx: idx, hex: h, canary: fmt.Sprintf("canary-t%02d-%s", idx, h)}
	tn.team = "Team " + tn.canary
	tn.email = fmt.Sprintf("admin-%s@t%02d.example", h, idx)
	return tn
}

// console is a browser stand-in for one tenant admin: a cookie jar, the
// session's CSRF token, redirects not followed. Each tenant's console
// talks from its own loopback address, as separate people would; sign-ups
// are throttled per address.
type console struct {
	base string
	hc   *http.Client
	mu   sync.Mutex
	csrf string
}

var csrfInput = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

func newConsole(base string, src net.IP) *console {
	jar, _ := cookiejar.New(nil) // never fails without options
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: src}, Timeout: 10 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 8, IdleConnTimeout: 30 * time.Second}
	return &console{base: base, hc: &http.Client{
		Jar: jar, Transport: tr, Timeout: 120 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// page is one console answer.
type page struct {
	status int
	body   string
	header http.Header
}

func (c *console) do(ctx context.Context, method, path string, form url.Values) (page, error) {
	var body io.Reader
	if form != nil {
		c.mu.Lock()
		if form.Get("_csrf") == "" {
			form.Set("_csrf", c.csrf)
		}
		c.mu.Unlock()
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return page{}, err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return page{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return page{}, fmt.Errorf("read %s %s: %w", method, path, err)
	}
	if m := csrfInput.FindSubmatch(b); m != nil {
		c.mu.Lock()
		c.csrf = string(m[1])
		c.mu.Unlock()
	}
	return page{status: resp.StatusCode, body: string(b), header: resp.Header}, nil
}

func (c *console) get(ctx context.Context, path string) (page, error) {
	return c.do(ctx, http.MethodGet, path, nil)
}

func (c *console) post(ctx context.Context, path string, form url.Values) (page, error) {
	if form == nil {
		form = url.Values{}
	}
	return c.do(ctx, http.MethodPost, path, form)
}

var newKeyCode = regexp.MustCompile(`data-testid="new-key">\s*(ppk_[^<\s]+)\s*<`)

// signUp signs the team up and keeps the first key (bound to "default").
func (tn *tenant) signUp(ctx context.Context) error {
	if _, err := tn.con.get(ctx, "/signup"); err != nil {
		return err
	}
	p, err := tn.con.post(ctx, "/signup", url.Values{"team": {tn.team}, "email": {tn.email}, "password": {"a long enough password " + tn.hex}})
	if err != nil {
		return err
	}
	if p.status != http.StatusSeeOther {
		return fmt.Errorf("sign-up: status %d", p.status)
	}
	// The first key is shown once, on the page the sign-up redirects to.
	if p, err = tn.con.get(ctx, p.header.Get("Location")); err != nil {
		return err
	}
	m := newKeyCode.FindStringSubmatch(p.body)
	if p.status != http.StatusOK || m == nil {
		return fmt.Errorf("welcome page: status %d, key found %v", p.status, m != nil)
	}
	tn.keys = append(tn.keys, key{value: m[1], user: "default"})
	return nil
}

// addKey issues a key for a new memory user through the console.
func (tn *tenant) addKey(ctx context.Context, user string) error {
	if _, err := tn.con.get(ctx, "/console/keys"); err != nil {
		return err
	}
	p, err := tn.con.post(ctx, "/console/keys", url.Values{"name": {"key for " + user + " " + tn.canary}, "user_id": {"new"}, "new_user": {user}, "scope": {"tenant"}})
	if err != nil {
		return err
	}
	if p.status != http.StatusSeeOther {
		return fmt.Errorf("create key for %s: status %d", user, p.status)
	}
	if p, err = tn.con.get(ctx, p.header.Get("Location")); err != nil {
		return err
	}
	m := newKeyCode.FindStringSubmatch(p.body)
	if p.status != http.StatusOK || m == nil {
		return fmt.Errorf("new key page for %s: status %d", user, p.status)
	}
	tn.keys = append(tn.keys, key{value: m[1], user: user, wide: true})
	return nil
}

// ids are the database ids of every tenant's objects, read as the owner,
// so the traffic can ask one tenant's console and tools for another's.
type ids struct {
	mu       sync.RWMutex
	users    map[int64][]int64
	userName map[int64]string // memory user id -> name
	convs    map[int64][]int64
	items    map[int64][]int64
	keys     map[int64][]int64
	accounts map[int64][]int64
	reports  map[int64][]int64
	// Users and conversations holding a turn with a canary: their pages
	// and exports must show the tenant's own.
	canaryUsers map[int64][]int64
	canaryConvs map[int64][]int64
	userItems   map[int64]map[string][]int64 // tenant -> memory user name -> item ids
}

// idQueries read (tenant, id) pairs; the owner role sees every tenant.
var idQueries = []struct {
	name string
	sql  string
}{
	{"users", `SELECT tenant_id, id FROM memory_users`},
	{"convs", `SELECT tenant_id, id FROM conversations`},
	{"items", `SELECT tenant_id, id FROM items`},
	{"keys", `SELECT tenant_id, id FROM api_keys`},
	{"accounts", `SELECT tenant_id, id FROM console_accounts WHERE tenant_id IS NOT NULL`},
	{"reports", `SELECT tenant_id, id FROM integrity_reports`},
	{"canaryUsers", `SELECT DISTINCT tenant_id, user_id FROM items WHERE body LIKE '%canary-t%'`},
	{"canaryConvs", `SELECT DISTINCT tenant_id, conversation_id FROM items WHERE body LIKE '%canary-t%'`},
}

const (
	userNamesSQL = `SELECT id, name FROM memory_users`
	userItemsSQL = `SELECT i.tenant_id, u.name, i.id FROM items i
		JOIN memory_users u ON u.tenant_id = i.tenant_id AND u.id = i.user_id`
)

func (x *ids) refresh(ctx context.Context, db *pgxpool.Pool) error {
	got := map[string]map[int64][]int64{}
	for _, q := range idQueries {
		rows, err := db.Query(ctx, q.sql)
		if err != nil {
			return fmt.Errorf("%s: %w", q.name, err)
		}
		m := map[int64][]int64{}
		for rows.Next() {
			var tid, id int64
			if err := rows.Scan(&tid, &id); err != nil {
				rows.Close()
				return err
			}
			m[tid] = append(m[tid], id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		got[q.name] = m
	}
	names := map[int64]string{}
	rows, err := db.Query(ctx, userNamesSQL)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id int64
		var n string
		if err := rows.Scan(&id, &n); err != nil {
			rows.Close()
			return err
		}
		names[id] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	userItems := map[int64]map[string][]int64{}
	rows, err = db.Query(ctx, userItemsSQL)
	if err != nil {
		return err
	}
	for rows.Next() {
		var tid, id int64
		var n string
		if err := rows.Scan(&tid, &n, &id); err != nil {
			rows.Close()
			return err
		}
		if userItems[tid] == nil {
			userItems[tid] = map[string][]int64{}
		}
		userItems[tid][n] = append(userItems[tid][n], id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.userItems = userItems
	x.users, x.convs, x.items = got["users"], got["convs"], got["items"]
	x.keys, x.accounts, x.reports = got["keys"], got["accounts"], got["reports"]
	x.canaryUsers, x.canaryConvs = got["canaryUsers"], got["canaryConvs"]
	x.userName = names
	return nil
}

var errNoID = errors.New("no id of that kind yet")

// pick returns a random id of kind for tenant tid.
func (x *ids) pick(r interface{ IntN(int) int }, kind string, tid int64) (int64, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var m map[int64][]int64
	switch kind {
	case "users":
		m = x.users
	case "convs":
		m = x.convs
	case "items":
		m = x.items
	case "keys":
		m = x.keys
	case "accounts":
		m = x.accounts
	case "reports":
		m = x.reports
	case "canaryUsers":
		m = x.canaryUsers
	case "canaryConvs":
		m = x.canaryConvs
	}
	l := m[tid]
	if len(l) == 0 {
		return 0, errNoID
	}
	return l[r.IntN(len(l))], nil
}

// userItem returns a random item of the named memory user of tenant tid.
func (x *ids) userItem(r interface{ IntN(int) int }, tid int64, user string) (int64, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	l := x.userItems[tid][user]
	if len(l) == 0 {
		return 0, errNoID
	}
	return l[r.IntN(len(l))], nil
}

func (x *ids) name(id int64) string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.userName[id]
}
