// Package authz is issue 9, item 7: every access decision is the same
// whichever way the credentials arrive. Against the real binary, every
// credential state (valid, another tenant's, revoked before and after use,
// wrong, missing, malformed) is sent every way a key can travel (the URL
// path, X-Perpetuity-Key in any case and with whitespace, both agreeing,
// both disagreeing, twice, in the provider's headers) to every
// key-authenticated route, and each answer is checked against a decision
// table written out below. Allowed requests must also land in the key's
// own tenant. The console's route × role matrix is checked the same way,
// over HTTP, for every route the console registers.
package authz

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/e2e/reliability/figure"
	"github.com/perpetuity/perpetuity/e2e/rig"
	"github.com/perpetuity/perpetuity/memory/store"
)

// route is one key-authenticated endpoint.
type route struct {
	name    string
	method  string
	suffix  string // after /k/<key> (or alone, with the key in a header)
	dialect string // error dialect: "openai", "anthropic" or "perpetuity"
	stores  bool   // an allowed call stores its text (the tenant check)
	body    func(marker string) string
	header  map[string][]string // provider credential and version headers
}

func routes() []route {
	return []route{
		{"chat", http.MethodPost, "/v1/chat/completions", "openai", true,
			func(m string) string {
				return `{"model":"gpt-4o","messages":[{"role":"user","content":"` + m + ` chat"}]}`
			},
			map[string][]string{"Content-Type": {"application/json"}, "Authorization": {"Bearer sk-authz-provider"}, "X-Perpetuity-Recall": {"off"}}},
		{"messages", http.MethodPost, "/v1/messages", "anthropic", true,
			func(m string) string {
				return `{"model":"claude-sonnet-4-5","max_tokens":32,"messages":[{"role":"user","content":"` + m + ` messages"}]}`
			},
			map[string][]string{"Content-Type": {"application/json"}, "X-Api-Key": {"sk-ant-authz-provider"}, "Anthropic-Version": {"2023-06-01"}, "X-Perpetuity-Recall": {"off"}}},
		{"responses", http.MethodPost, "/v1/responses", "openai", true,
			func(m string) string { return `{"model":"gpt-4o","input":"` + m + ` responses"}` },
			map[string][]string{"Content-Type": {"application/json"}, "Authorization": {"Bearer sk-authz-provider"}, "X-Perpetuity-Recall": {"off"}}},
		{"models passthrough", http.MethodGet, "/v1/models", "openai", false,
			func(string) string { return "" },
			map[string][]string{"Authorization": {"Bearer sk-authz-provider"}}},
		{"import", http.MethodPost, "/perpetuity/import", "perpetuity", true,
			func(m string) string {
				return `{"conversation":"` + m + `","turns":[{"role":"user","text":"` + m + ` import","at":"2024-05-06T07:08:09Z"}]}` + "\n"
			},
			map[string][]string{"Content-Type": {"application/x-ndjson"}}},
	}
}

// state is one credential state.
type state struct {
	name   string
	key    string
	tenant int64 // the tenant an allowed call lands in; 0: must be refused
}

// way is one way of delivering the key. It returns the URL path and the
// headers to add; other is a second valid key (another tenant's) for the
// conflicting-keys way.
type way struct {
	name string
	// decide maps the state's decision to this way's: "allow", "401" or "400".
	decide  func(st state, r route) string
	deliver func(key, other string, r route) (path string, h map[string][]string)
}

func bare(r route) string { return r.suffix }

func ways() []way {
	byState := func(st state, _ route) string {
		if st.tenant != 0 {
			return "allow"
		}
		return "401"
	}
	header := func(name, pad string) func(string, string, route) (string, map[string][]string) {
		return func(key, _ string, r route) (string, map[string][]string) {
			if key == "" {
				return bare(r), nil
			}
			return bare(r), map[string][]string{name: {pad + key + pad}}
		}
	}
	return []way{
		{"path /k/<key>", byState, func(key, _ string, r route) (string, map[string][]string) {
			if key == "" {
				return bare(r), nil
			}
			return "/k/" + key + r.suffix, nil
		}},
		{"X-Perpetuity-Key", byState, header("X-Perpetuity-Key", "")},
		{"x-perpetuity-key (lower case)", byState, header("x-perpetuity-key", "")},
		{"X-PERPETUITY-KEY (upper case)", byState, header("X-PERPETUITY-KEY", "")},
		{"X-Perpetuity-Key with spaces and tabs", byState, header("X-Perpetuity-Key", " \t ")},
		{"path and header agreeing", byState, func(key, _ string, r route) (string, map[string][]string) {
			if key == "" {
				return bare(r), nil
			}
			return "/k/" + key + r.suffix, map[string][]string{"X-Perpetuity-Key": {key}}
		}},
		// Disagreeing keys are refused whatever either one is: no silent
		// choice between two tenants.
		{"path and header disagreeing", func(st state, _ route) string {
			if st.key == "" {
				return "allow-other" // only the header's key is there
			}
			return "400"
		}, func(key, other string, r route) (string, map[string][]string) {
			if key == "" {
				return bare(r), map[string][]string{"X-Perpetuity-Key": {other}}
			}
			return "/k/" + key + r.suffix, map[string][]string{"X-Perpetuity-Key": {other}}
		}},
		{"X-Perpetuity-Key twice, same key", func(st state, r route) string {
			if st.key == "" {
				return "401"
			}
			return "400"
		}, func(key, _ string, r route) (string, map[string][]string) {
			if key == "" {
				return bare(r), nil
			}
			return bare(r), map[string][]string{"X-Perpetuity-Key": {key, key}}
		}},
		{"two keys in one header, comma-joined", func(st state, r route) string { return "401" },
			func(key, other string, r route) (string, map[string][]string) {
				return bare(r), map[string][]string{"X-Perpetuity-Key": {key + ", " + other}}
			}},
		// The Perpetuity key is read from the path or X-Perpetuity-Key
		// only; in the provider's headers it is refused, never forwarded.
		{"Authorization: Bearer only", func(state, route) string { return "401" },
			func(key, _ string, r route) (string, map[string][]string) {
				return bare(r), map[string][]string{"Authorization": {"Bearer " + key}}
			}},
		{"authorization: bearer (lower case) only", func(state, route) string { return "401" },
			func(key, _ string, r route) (string, map[string][]string) {
				return bare(r), map[string][]string{"authorization": {"bearer " + key}}
			}},
		{"x-api-key only", func(state, route) string { return "401" },
			func(key, _ string, r route) (string, map[string][]string) {
				return bare(r), map[string][]string{"X-Api-Key": {key}}
			}},
		{"X-API-KEY only", func(state, route) string { return "401" },
			func(key, _ string, r route) (string, map[string][]string) {
				return bare(r), map[string][]string{"X-API-KEY": {key}}
			}},
		// The key in the path and again as the provider credential: the
		// proxy refuses to pass its own key to a provider; import has no
		// provider and reads only the path.
		{"path, and BEARER <key> as provider credential", func(st state, r route) string {
			if r.name == "import" || !strings.HasPrefix(st.key, store.KeyPrefix) {
				return byState(st, r)
			}
			return "401"
		}, func(key, _ string, r route) (string, map[string][]string) {
			if key == "" {
				return bare(r), nil
			}
			return "/k/" + key + r.suffix, map[string][]string{"Authorization": {"BEARER " + key}}
		}},
	}
}

// merge lays the way's headers over the route's: a way that sends a
// provider header replaces the route's own.
func merge(base, over map[string][]string) map[string][]string {
	out := map[string][]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		for bk := range out {
			if strings.EqualFold(bk, k) {
				delete(out, bk)
			}
		}
		out[k] = v
	}
	return out
}

// verdict reads what the server decided from an answer.
func verdict(a answer, r route, hdr map[string][]string) (string, error) {
	switch {
	case a.status == http.StatusOK:
		return "allow", nil
	case a.status != http.StatusUnauthorized && a.status != http.StatusBadRequest:
		return fmt.Sprint(a.status), nil
	}
	// A refusal must be in the route's dialect.
	dialect := r.dialect
	if r.name == "models passthrough" {
		for k, vs := range hdr {
			if (strings.EqualFold(k, "X-Api-Key") || strings.EqualFold(k, "Anthropic-Version")) && strings.Join(vs, "") != "" {
				dialect = "anthropic" // the proxy guesses from non-empty Anthropic headers
			}
		}
	}
	var body struct {
		Type  string `json:"type"`
		Error struct {
			Type string `json:"type"`
			Code string `json:"code"`
		} `json:"error"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(a.body, &body); err != nil {
		return fmt.Sprint(a.status), fmt.Errorf("error body is not JSON: %.200s", a.body)
	}
	wantType := map[int]string{401: "authentication_error", 400: "invalid_request_error"}[a.status]
	switch dialect {
	case "anthropic":
		if body.Type != "error" || body.Error.Type != wantType {
			return fmt.Sprint(a.status), fmt.Errorf("not an Anthropic %s: %.200s", wantType, a.body)
		}
	case "openai":
		if body.Error.Type != "invalid_request_error" || (a.status == 401) != (body.Error.Code == "invalid_api_key") {
			return fmt.Sprint(a.status), fmt.Errorf("not an OpenAI %d error: %.200s", a.status, a.body)
		}
	default:
		if body.Message == "" {
			return fmt.Sprint(a.status), fmt.Errorf("no message in the import error: %.200s", a.body)
		}
	}
	return fmt.Sprint(a.status), nil
}

// tenant setup: A with a live key, a key revoked before use and one
// revoked after use; B with its own key.
type keys struct {
	a, b, revokedBefore, revokedAfter string
	tenantA, tenantB                  int64
}

func setupKeys(ctx context.Context, t *testing.T, w *world) (keys, *store.DB, int64) {
	ta := rig.CreateTenant(t, w.env, "authz A")
	tb := rig.CreateTenant(t, w.env, "authz B")
	db, err := store.Open(ctx, w.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	userA, err := rig.Scalar(ctx, w.dbURL, `SELECT id FROM memory_users WHERE tenant_id = $1`, ta.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	k := keys{a: ta.Key, b: tb.Key, tenantA: ta.TenantID, tenantB: tb.TenantID}
	before, key, err := db.CreateKey(ctx, ta.TenantID, userA, "revoked before use")
	if err != nil {
		t.Fatal(err)
	}
	k.revokedBefore = key
	if err := db.RevokeKey(ctx, ta.TenantID, before); err != nil {
		t.Fatal(err)
	}
	afterID, key, err := db.CreateKey(ctx, ta.TenantID, userA, "revoked after use")
	if err != nil {
		t.Fatal(err)
	}
	k.revokedAfter = key
	return k, db, afterID
}

// keyCacheWait outlasts the proxy's key cache (2 s): the longest a revoked
// key may keep working in one process, documented in proxy/keycache.go.
const keyCacheWait = 2500 * time.Millisecond

func TestAuthorizationEquivalence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := startWorld(t)
	k, db, afterID := setupKeys(ctx, t, w)

	// Use the revoked-after-use key once (allowed), then revoke it.
	chat := routes()[0]
	if a := w.send(http.MethodPost, "/k/"+k.revokedAfter+chat.suffix, chat.header, chat.body("authz-warm")); a.status != http.StatusOK {
		t.Fatalf("key before revocation: status %d: %.300s", a.status, a.body)
	}
	if err := db.RevokeKey(ctx, k.tenantA, afterID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(keyCacheWait)

	wrong := "ppk_" + strings.Repeat("Wr0ng", 6) + "xy" // well-formed, never issued
	states := []state{
		{"valid", k.a, k.tenantA},
		{"another tenant's key", k.b, k.tenantB},
		{"revoked before use", k.revokedBefore, 0},
		{"revoked after use", k.revokedAfter, 0},
		{"wrong (never issued)", wrong, 0},
		{"missing", "", 0},
		{"malformed: prefix only", "ppk_", 0},
		{"malformed: not a key", "not-a-key", 0},
		{"malformed: PPK_ upper-case prefix", "PPK_" + k.a[4:], 0},
		{"malformed: truncated", k.a[:len(k.a)-1], 0},
		{"malformed: one byte more", k.a + "x", 0},
		{"malformed: 4 kB long", "ppk_" + strings.Repeat("A", 4096), 0},
	}

	type outcome struct {
		state, way, route string
		want, got         string
		problem           string
		marker            string
		tenant            int64
	}
	var outcomes []outcome
	n := 0
	for _, st := range states {
		for _, wy := range ways() {
			for _, r := range routes() {
				n++
				marker := fmt.Sprintf("authz-case-%d", n)
				other := k.b
				if st.key == k.b {
					other = k.a
				}
				want := wy.decide(st, r)
				tenant := st.tenant
				if want == "allow-other" {
					want, tenant = "allow", k.tenantB
				}
				path, h := wy.deliver(st.key, other, r)
				hdr := merge(r.header, h)
				a := w.send(r.method, path, hdr, r.body(marker))
				got, err := verdict(a, r, hdr)
				o := outcome{state: st.name, way: wy.name, route: r.name, want: want, got: got, marker: marker, tenant: tenant}
				if err != nil {
					o.problem = err.Error()
				}
				outcomes = append(outcomes, o)
			}
		}
	}

	// Where did each allowed call land, and did any refused one store?
	time.Sleep(500 * time.Millisecond)
	landed := landedTenants(ctx, t, w.dbURL)
	mismatches := 0
	perWay := map[string][2]int{}
	for i := range outcomes {
		o := &outcomes[i]
		if o.problem == "" && o.got != o.want {
			o.problem = fmt.Sprintf("decided %s, want %s", o.got, o.want)
		}
		r := routeByName(o.route)
		if o.problem == "" && r.stores {
			got := landed[o.marker]
			switch {
			case o.want == "allow" && (len(got) != 1 || got[0] != o.tenant):
				o.problem = fmt.Sprintf("allowed, but stored in tenants %v, want [%d]", got, o.tenant)
			case o.want != "allow" && len(got) > 0:
				o.problem = fmt.Sprintf("refused, yet stored in tenants %v", got)
			}
		}
		c := perWay[o.way]
		c[0]++
		if o.problem != "" {
			mismatches++
			c[1]++
			t.Errorf("%s / %s / %s: %s", o.state, o.way, o.route, o.problem)
		}
		perWay[o.way] = c
	}

	pm, pn := providerCredentialEquivalence(t, w)
	mismatches += pm

	var d strings.Builder
	fmt.Fprintf(&d, "%d credential states × %d ways × %d routes = %d decisions against the real binary; allowed calls checked to land in the key's own tenant "+
		"(their text stored there and nowhere else), refused calls checked to store nothing, refusals checked to be in the route's dialect. "+
		"Revocation is seen within the key cache's 2 s (waited %s). Plus %d provider-credential variants (scheme and header-name case, whitespace) "+
		"checked to reach the upstream as the same credential.\n\n| way | decisions | mismatches |\n|---|--:|--:|\n",
		len(states), len(ways()), len(routes()), len(outcomes), keyCacheWait, pn)
	names := make([]string, 0, len(perWay))
	for k := range perWay {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(&d, "| %s | %d | %d |\n", name, perWay[name][0], perWay[name][1])
	}
	fmt.Fprintf(&d, "| provider credential variants | %d | %d |\n", pn, pm)
	figure.Record(t, figure.Figure{
		Item:    7,
		Name:    "Authorization equivalence",
		Figure:  fmt.Sprintf("%d mismatches in %d access decisions", mismatches, len(outcomes)+pn),
		Target:  "0 mismatches",
		Pass:    mismatches == 0,
		Details: d.String(),
	})
}

func routeByName(name string) route {
	for _, r := range routes() {
		if r.name == name {
			return r
		}
	}
	return route{}
}

// landedSQL finds every stored text that carries a case marker, by tenant
// (read as the owner role, across every tenant).
const landedSQL = `SELECT DISTINCT substring(body from 'authz-case-[0-9]+'), tenant_id FROM items WHERE body LIKE '%authz-case-%'`

func landedTenants(ctx context.Context, t *testing.T, dbURL string) map[string][]int64 {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	type row struct {
		Marker string
		Tenant int64
	}
	rows, err := conn.Query(ctx, landedSQL)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]int64{}
	for _, r := range rs {
		out[r.Marker] = append(out[r.Marker], r.Tenant)
	}
	return out
}

// providerCredentialEquivalence: the provider key reaches the upstream as
// the same credential whatever the case of the scheme or header name and
// whatever whitespace surrounds it.
func providerCredentialEquivalence(t *testing.T, w *world) (mismatches, n int) {
	k := rig.CreateTenant(t, w.env, "authz provider credentials")
	const openaiKey, anthKey = "sk-proj-authzEquivalence0001", "sk-ant-authzEquivalence0002"
	cases := []struct {
		name, path, body string
		h                map[string][]string
		header, want     string // what the upstream must receive
	}{}
	for i, v := range []map[string][]string{
		{"Authorization": {"Bearer " + openaiKey}},
		{"Authorization": {"bearer " + openaiKey}},
		{"Authorization": {"BEARER " + openaiKey}},
		{"Authorization": {"Bearer   " + openaiKey + "  "}},
		{"authorization": {"Bearer " + openaiKey}},
		{"AUTHORIZATION": {"bEaReR " + openaiKey}},
	} {
		cases = append(cases, struct {
			name, path, body string
			h                map[string][]string
			header, want     string
		}{fmt.Sprintf("openai variant %d %v", i, keysOf(v)), "/k/" + k.Key + "/v1/chat/completions",
			fmt.Sprintf(`{"model":"gpt-4o","messages":[{"role":"user","content":"provider-case-o%d"}]}`, i), v, "Authorization", "Bearer " + openaiKey})
	}
	for i, v := range []map[string][]string{
		{"X-Api-Key": {anthKey}},
		{"x-api-key": {anthKey}},
		{"X-API-KEY": {anthKey}},
		{"X-Api-Key": {"  " + anthKey + "\t"}},
		{"Authorization": {"Bearer " + anthKey}},
		{"authorization": {"BEARER " + anthKey}},
	} {
		v["Anthropic-Version"] = []string{"2023-06-01"}
		cases = append(cases, struct {
			name, path, body string
			h                map[string][]string
			header, want     string
		}{fmt.Sprintf("anthropic variant %d %v", i, keysOf(v)), "/k/" + k.Key + "/v1/messages",
			fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"provider-case-a%d"}]}`, i), v, "X-Api-Key", anthKey})
	}
	for _, c := range cases {
		c.h["Content-Type"] = []string{"application/json"}
		a := w.send(http.MethodPost, c.path, c.h, c.body)
		marker := c.body[strings.Index(c.body, "provider-case-"):]
		marker = marker[:strings.IndexByte(marker, '"')]
		got := ""
		for _, r := range w.fake.Requests() {
			if strings.Contains(string(r.Body), marker) {
				got = r.Header.Get(c.header)
				other := "Authorization"
				if c.header == other {
					other = "X-Api-Key"
				}
				if r.Header.Get(other) != "" {
					got += " (and " + other + ")"
				}
			}
		}
		if a.status != http.StatusOK || got != c.want {
			mismatches++
			t.Errorf("provider credential %s: status %d, upstream %s %q, want %q", c.name, a.status, c.header, got, c.want)
		}
	}
	return mismatches, len(cases)
}

func keysOf(m map[string][]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
