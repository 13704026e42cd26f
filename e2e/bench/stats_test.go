package bench

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	t.Parallel()
	ms := func(xs ...int) []time.Duration {
		out := make([]time.Duration, len(xs))
		for i, x := range xs {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, tc := range []struct {
		name     string
		in       []time.Duration
		p50, p99 time.Duration
	}{
		{"empty", nil, 0, 0},
		{"one", ms(7), 7 * time.Millisecond, 7 * time.Millisecond},
		{"unsorted", ms(5, 1, 3), 3 * time.Millisecond, 5 * time.Millisecond},
		{"1..100", ms(hundred...), 50 * time.Millisecond, 99 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := DistOf(tc.in)
			if d.P50 != tc.p50 || d.P99 != tc.p99 || d.N != len(tc.in) {
				t.Errorf("DistOf = %+v, want p50 %v p99 %v n %d", d, tc.p50, tc.p99, len(tc.in))
			}
		})
	}
}

func TestPairTakesMedianOfPerRoundDifferences(t *testing.T) {
	t.Parallel()
	d := func(x int) []time.Duration { return []time.Duration{time.Duration(x)} }
	// Three rounds; the noisy middle one moves both sides.
	p := Pair([][2][]time.Duration{{d(10), d(13)}, {d(100), d(104)}, {d(11), d(12)}})
	for _, c := range []struct {
		name      string
		got, want time.Duration
	}{
		{"added p50", p.Added50, 3},
		{"added p99", p.Added99, 3},
		{"added lo", p.Added50Lo, 1},
		{"added hi", p.Added50Hi, 4},
		{"base p50", p.Base.P50, 11},
		{"subject p50", p.Subj.P50, 13},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if p.Rounds != 3 {
		t.Errorf("rounds = %d, want 3", p.Rounds)
	}
}

func TestItemsLabel(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{300: "300", 10_000: "10k", 250_000: "250k", 1_000_000: "1M", 2_500_000: "2.5M"} {
		if got := itemsLabel(n); got != want {
			t.Errorf("itemsLabel(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestStmtName(t *testing.T) {
	t.Parallel()
	for sql, want := range map[string]string{
		"begin": "begin",
		"SELECT set_config('app.tenant_id', $1, true)":                          "set tenant",
		"INSERT INTO messages (tenant_id) VALUES ($1)":                          "insert messages",
		"UPDATE tenant_heads SET seq = seq + 1 WHERE tenant_id = $1":            "update tenant_heads",
		"SELECT i.id FROM items i JOIN retrieval_rows r ON r.item_id = i.id":    "select items+retrieval_rows",
		"SELECT a FROM items i WHERE x = (SELECT max(id) FROM items p)":         "select items (subqueries)",
		"WITH req AS (SELECT 1) INSERT INTO activations AS a SELECT * FROM req": "with … insert activations",
	} {
		if got := stmtName(sql); got != want {
			t.Errorf("stmtName(%q) = %q, want %q", sql, got, want)
		}
	}
}

// TestSlowest: the sample a p99 picks, named from the top, agrees with
// Percentile.
func TestSlowest(t *testing.T) {
	t.Parallel()
	cases := []struct {
		n    int
		want string
	}{{4, "slowest"}, {60, "slowest"}, {100, "2nd slowest"}, {200, "3rd slowest"}, {1000, "11th slowest"}, {2100, "22nd slowest"}}
	for _, c := range cases {
		if got := slowest(c.n); got != c.want {
			t.Errorf("slowest(%d) = %q, want %q", c.n, got, c.want)
		}
		s := make([]time.Duration, c.n)
		for i := range s {
			s[i] = time.Duration(i)
		}
		k := c.n - int(Percentile(s, 0.99))
		if prefix := strconv.Itoa(k); (k == 1) != (c.want == "slowest") || (k > 1 && !strings.HasPrefix(c.want, prefix)) {
			t.Errorf("n=%d: Percentile picks the slowest but %d, the case says %q", c.n, k-1, c.want)
		}
	}
}
