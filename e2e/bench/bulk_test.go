package bench

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/arena/synth"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/memory/text"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// TestLoaderLeavesWhatCapturesWould grows a tenant twice with the bulk
// loader and checks the rows agree with each other and with what the
// engine's own capture stores for the same text (v3: its dense vector
// too), and that the real engine retrieves a loaded item by its words.
func TestLoaderLeavesWhatCapturesWould(t *testing.T) {
	t.Parallel()
	for _, version := range []int{1, DenseVersion} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			t.Parallel()
			loaderLeavesWhatCapturesWould(t, version)
		})
	}
}

func loaderLeavesWhatCapturesWould(t *testing.T, version int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a bound, not a timing: loading two dictionaries on a busy machine takes a while
	defer cancel()
	url := dbtest.New(t)
	db, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	owner := dbtest.Owner(t, url) // reads every row, across row-level security
	k, err := newKit(ctx, db, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Its own database: a tenant on v3 in a shared one would make it the
	// version other tests' new tenants start on.
	tn, err := NewTenantOn(ctx, db, "loader", 3, version)
	if err != nil {
		t.Fatal(err)
	}
	if tn.Dict != version {
		t.Fatalf("tenant created on v%d, want v%d", tn.Dict, version)
	}
	items := synth.Corpus(synth.Config{Seed: 5, Items: 400, Users: 3, Vocab: SynthVocab})
	l := NewLoader(db, k.vocab, k.counter.Count)
	l.Dictionary(k.dense)
	for _, part := range [][2]int{{0, 150}, {150, 400}} {
		if err := l.Load(ctx, tn, items[part[0]:part[1]]); err != nil {
			t.Fatal(err)
		}
	}

	q := func(sql string) int64 {
		t.Helper()
		var args []any
		if strings.Contains(sql, "$1") {
			args = append(args, tn.ID)
		}
		var n int64
		if err := owner.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n
	}
	// A turn none of whose words has a vector (names, rare words) has no
	// dense vector, under v3 as at capture.
	withVector := 0
	for i := range items {
		if version == DenseVersion && memory.DeriveRow(k.dense, k.vocab.Tokens(&items[i])).Dense != nil {
			withVector++
		}
	}
	if version == DenseVersion && withVector < len(items)/2 {
		t.Fatalf("only %d of %d synthetic turns have a vector", withVector, len(items))
	}
	wantDense := fmt.Sprintf(`SELECT %d`, withVector)
	for _, c := range []struct {
		name      string
		got, want string
	}{
		{"head", `SELECT seq FROM tenant_heads WHERE tenant_id = $1`, `SELECT 400`},
		{"messages", `SELECT count(*) FROM messages WHERE tenant_id = $1`, `SELECT 400`},
		{"activations", `SELECT count(*) FROM activations WHERE tenant_id = $1 AND peak = 1`, `SELECT 400`},
		{"corpus items", `SELECT items FROM corpus_stats WHERE tenant_id = $1`, `SELECT 400`},
		{"corpus length", `SELECT total_length FROM corpus_stats WHERE tenant_id = $1`,
			`SELECT sum(length) FROM retrieval_rows WHERE tenant_id = $1`},
		{"term counts", `SELECT sum(df) FROM term_stats WHERE tenant_id = $1`,
			`SELECT sum(cardinality(term_ids)) FROM retrieval_rows WHERE tenant_id = $1`},
		{"clocks", `SELECT sum(clock) FROM memory_users WHERE tenant_id = $1`,
			`SELECT sum(c) FROM (SELECT max(born_clock) AS c FROM items WHERE tenant_id = $1 GROUP BY user_id) m`},
		{"rows of the tenant's version", `SELECT count(*) FROM retrieval_rows r JOIN tenant_heads h
			ON h.tenant_id = r.tenant_id AND h.dict_version = r.dict_version WHERE r.tenant_id = $1`, `SELECT 400`},
		{"dense rows", `SELECT count(*) FROM retrieval_rows WHERE tenant_id = $1 AND dense IS NOT NULL`, wantDense},
		{"seqs distinct", `SELECT count(DISTINCT seq) FROM items WHERE tenant_id = $1`, `SELECT 400`},
		{"births", `SELECT CASE WHEN to_regclass('item_births') IS NULL THEN 400
			ELSE (SELECT count(*) FROM item_births WHERE tenant_id = $1) END`, `SELECT 400`},
	} {
		want := q(c.want)
		if got := q(c.got); got != want {
			t.Errorf("%s: %d, want %d", c.name, got, want)
		}
	}

	// The loaded rows are what a capture of the same text stores.
	type stored struct {
		Body   string
		Tokens []string
		Terms  []int32
		Freqs  []int16
		Length int32
		Dense  []byte
	}
	read := func(itemID int64) stored {
		t.Helper()
		var s stored
		err := owner.QueryRow(ctx, `SELECT i.body, i.tokens, r.term_ids, r.term_freqs, r.length, r.dense FROM items i
			JOIN retrieval_rows r ON r.tenant_id = i.tenant_id AND r.item_id = i.id WHERE i.tenant_id = $1 AND i.id = $2`,
			tn.ID, itemID).Scan(&s.Body, &s.Tokens, &s.Terms, &s.Freqs, &s.Length, &s.Dense)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var ids []int64
	rows, err := owner.Query(ctx, `SELECT id FROM items WHERE tenant_id = $1 ORDER BY seq LIMIT 3`, tn.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	eng := k.engine()
	conv, err := db.EnsureConversation(ctx, tn.ID, tn.Users[0], "h:loader-check", "check")
	if err != nil {
		t.Fatal(err)
	}
	who := memory.Who{TenantID: tn.ID, UserID: tn.Users[0], UserName: "u1", ConversationID: conv}
	for i, id := range ids {
		loaded := read(id)
		if got := text.Normalize(loaded.Body); !slices.Equal(got, loaded.Tokens) {
			t.Errorf("item %d: Normalize(body) = %q, stored tokens %q", id, got, loaded.Tokens)
		}
		c, err := eng.Capture(ctx, memory.Message{Who: who, Role: "user", Text: loaded.Body, Position: i})
		if err != nil {
			t.Fatal(err)
		}
		captured := read(c.ItemIDs[0])
		if !slices.Equal(captured.Tokens, loaded.Tokens) || !slices.Equal(captured.Terms, loaded.Terms) ||
			!slices.Equal(captured.Freqs, loaded.Freqs) || captured.Length != loaded.Length || !bytes.Equal(captured.Dense, loaded.Dense) {
			t.Errorf("item %d: loaded %+v, captured %+v", id, loaded, captured)
		}
	}

	// The real engine finds a loaded item by its words.
	target := items[250]
	tokens := k.vocab.Tokens(&target)
	body := Text(tokens)
	fr, err := k.engine().Frame(ctx, memory.FrameQuery{
		Who:  memory.Who{TenantID: tn.ID, UserID: tn.Users[target.User-1], UserName: "owner", ConversationID: tn.Conversation(target.User)},
		Live: "Do you remember " + strings.Join(tokens, " ") + "?", Probe: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, turn := range fr.Turns {
		all.WriteString(turn.Text)
	}
	if !strings.Contains(all.String(), body) {
		t.Errorf("the frame for a question made of item 250's words lacks it (%d items, %d tokens)", fr.Items, fr.Tokens)
	}
}

func TestVocabularyRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(ctx, dbtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	k, err := newKit(ctx, db, 1)
	if err != nil {
		t.Fatal(err)
	}
	items := synth.Corpus(synth.Config{Seed: 9, Items: 200, Users: 4, Vocab: SynthVocab})
	for i := range items {
		it := &items[i]
		ids, freqs, _ := k.vocab.Row(k.vocab.Tokens(it))
		if len(ids) != len(it.Terms) {
			t.Fatalf("item %d: %d synthetic terms became %d dictionary terms", i, len(it.Terms), len(ids))
		}
		var sum, want int
		for _, f := range freqs {
			sum += int(f)
		}
		for _, f := range it.Freqs {
			want += int(f)
		}
		if sum != want {
			t.Fatalf("item %d: frequencies sum to %d, want %d", i, sum, want)
		}
	}
}
