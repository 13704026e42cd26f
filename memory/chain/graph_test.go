package chain_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/memory/chain"
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/store"
)

// fakeLex is a tiny lexicon: every token is its own term (dict.HashedID),
// except a handful of stopwords. Distinct ids, ascending, as a
// dictionary's.
type fakeLex struct{}

var stop = map[string]bool{"the": true, "a": true, "and": true, "of": true, "we": true, "to": true}

func (fakeLex) Terms(tokens []string) ([]uint32, []uint16, int) {
	var ids []uint32
	for _, t := range tokens {
		if !stop[t] {
			ids = append(ids, dict.HashedID(t))
		}
	}
	n := len(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	return ids, make([]uint16, len(ids)), n
}

// step is an item (ID > 0) or, with Purge set, the purge of a user.
type step struct {
	store.ChainItem
	Purge int64
}

// it is an item of user in conv; seq is its id, tokens its words.
func it(id, user, conv int64, words string, sources ...int64) step {
	ws := strings.Fields(words)
	return step{ChainItem: store.ChainItem{ID: id, Seq: id, UserID: user, ConvID: conv, Role: "user",
		TokenCount: int32(len(ws)) + 1, Tokens: ws, Sources: sources}}
}

func purge(user int64) step { return step{Purge: user} }

// run feeds the steps through a fresh graph in order.
func run(lex chain.Lexicon, rules chain.Rules, steps []step) []chain.Edge {
	g := chain.NewGraph(lex, rules)
	var out []chain.Edge
	for _, s := range steps {
		if s.Purge != 0 {
			g.Purge(s.Purge)
			continue
		}
		out = append(out, g.Add(s.ChainItem)...)
	}
	return out
}

// keys names edges as "src>dst relation", sorted.
func keys(es []chain.Edge) []string {
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, fmt.Sprintf("%d>%d %s", e.Src, e.Dst, e.Relation))
	}
	slices.Sort(out)
	return out
}

// filler is n items of user in conv from id on, each with words of its own.
func filler(from, n, user, conv int64) []step {
	var out []step
	for i := from; i < from+n; i++ {
		out = append(out, it(i, user, conv, fmt.Sprintf("filler%da filler%db", i, i)))
	}
	return out
}

func cat(parts ...[]step) []step { return slices.Concat(parts...) }

func TestGraphRules(t *testing.T) {
	t.Parallel()
	loose := chain.Rules{MaxDF: 3, MinWeight: 0.5, Near: 4, Links: 3, MinEvidence: 0.5, EvidenceLinks: 3}
	noThread := loose
	noThread.MinWeight = 100
	cases := []struct {
		name  string
		rules chain.Rules
		steps []step
		want  []string
	}{
		{name: "rare words across conversations", rules: loose,
			steps: []step{it(1, 1, 10, "adoption agency portland"), it(2, 1, 20, "the adoption agency in portland")},
			want:  []string{"2>1 thread"}},
		{name: "stopwords alone link nothing", rules: loose,
			steps: []step{it(1, 1, 10, "the and of a"), it(2, 1, 20, "the and of a")}},
		{name: "same conversation within Near is adjacency", rules: loose,
			// Item 4 is 3 of the owner's items after item 1: Near is 4.
			steps: cat([]step{it(1, 1, 10, "adoption agency")}, filler(2, 2, 1, 10), []step{it(4, 1, 10, "adoption agency")})},
		{name: "same conversation Near items back is a thread", rules: loose,
			steps: cat([]step{it(1, 1, 10, "adoption agency")}, filler(2, 3, 1, 10), []step{it(5, 1, 10, "adoption agency")}),
			want:  []string{"5>1 thread"}},
		{name: "near in another conversation is a thread", rules: loose,
			steps: []step{it(1, 1, 10, "adoption agency"), it(2, 1, 11, "adoption agency")},
			want:  []string{"2>1 thread"}},
		{name: "a word in more than MaxDF earlier items links nothing",
			rules: chain.Rules{MaxDF: 2, MinWeight: 0.5, Near: 4, Links: 3},
			// Item 3 sees coffee in 2 earlier items (rare), item 4 in 3.
			steps: []step{it(1, 1, 10, "coffee"), it(2, 1, 11, "coffee"), it(3, 1, 12, "coffee"), it(4, 1, 13, "coffee")},
			want:  []string{"2>1 thread", "3>1 thread", "3>2 thread"}},
		{name: "weight at least MinWeight links", rules: chain.Rules{MaxDF: 3, MinWeight: 1.38, Near: 4},
			// Two words of df 1 among 1 earlier item: 2 ln 2 = 1.386.
			steps: []step{it(1, 1, 10, "alpha beta"), it(2, 1, 11, "alpha beta")},
			want:  []string{"2>1 thread"}},
		{name: "weight below MinWeight does not", rules: chain.Rules{MaxDF: 3, MinWeight: 1.39, Near: 4},
			steps: []step{it(1, 1, 10, "alpha beta"), it(2, 1, 11, "alpha beta")}},
		{name: "at most Links per item, the heaviest, ties to the nearer",
			rules: chain.Rules{MaxDF: 3, MinWeight: 0.5, Near: 4, Links: 2},
			// Item 4 shares two words with item 1 and one with 2 and 3.
			steps: []step{it(1, 1, 10, "zeta eta"), it(2, 1, 11, "zeta"), it(3, 1, 12, "zeta"), it(4, 1, 13, "zeta eta")},
			want:  []string{"2>1 thread", "3>1 thread", "3>2 thread", "4>1 thread", "4>3 thread"}},
		{name: "evidence only to the reply's sources, and only the owner's", rules: noThread,
			steps: []step{
				it(1, 1, 10, "kayak lesson saturday"),
				it(2, 1, 11, "kayak lesson saturday"), // not shown
				it(3, 1, 10, "nothing shared here"),   // shown, no word in common
				it(4, 2, 20, "kayak lesson saturday"), // shown, another owner's
				it(5, 1, 12, "kayak lesson saturday", 4, 3, 1),
			},
			want: []string{"5>1 evidence"}},
		{name: "what a reply drew on is not also its thread", rules: loose,
			steps: []step{it(1, 1, 10, "kayak lesson"), it(2, 1, 11, "kayak lesson"), it(3, 1, 12, "kayak lesson", 1)},
			want:  []string{"2>1 thread", "3>1 evidence", "3>2 thread"}},
		{name: "at most EvidenceLinks", rules: chain.Rules{MaxDF: 8, MinWeight: 100, Near: 4, EvidenceLinks: 2, MinEvidence: 0.1},
			steps: []step{it(1, 1, 10, "kayak"), it(2, 1, 11, "kayak"), it(3, 1, 12, "kayak"), it(4, 1, 13, "kayak", 1, 2, 3)},
			want:  []string{"4>2 evidence", "4>3 evidence"}},
		{name: "another owner's items are never linked", rules: loose,
			steps: []step{it(1, 1, 10, "adoption agency portland"), it(2, 2, 20, "adoption agency portland"),
				it(3, 2, 21, "adoption agency portland")},
			want: []string{"3>2 thread"}},
		{name: "a purge resets its owner only", rules: loose,
			steps: []step{it(1, 1, 10, "adoption agency"), it(2, 2, 20, "adoption agency"), purge(1),
				it(3, 1, 11, "adoption agency"), it(4, 2, 21, "adoption agency"), it(5, 1, 12, "adoption agency")},
			want: []string{"4>2 thread", "5>3 thread"}},
		{name: "a first item has nothing to continue", rules: loose,
			steps: []step{it(1, 1, 10, "adoption agency", 1)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := keys(run(fakeLex{}, c.rules, c.steps))
			if !slices.Equal(got, c.want) {
				t.Fatalf("edges %v, want %v", got, c.want)
			}
		})
	}
}

// TestGraphEdgeValues: an edge carries its owner, both ends' token counts
// and the summed weight ln(1 + n/df) of the rare words it rests on.
func TestGraphEdgeValues(t *testing.T) {
	t.Parallel()
	steps := []step{it(1, 7, 10, "alpha beta gamma"), it(2, 7, 11, "alpha"), it(3, 7, 12, "alpha beta")}
	es := run(fakeLex{}, chain.Rules{MaxDF: 8, MinWeight: 0.1, Near: 4}, steps)
	if got := keys(es); !slices.Equal(got, []string{"2>1 thread", "3>1 thread", "3>2 thread"}) {
		t.Fatalf("edges %v", got)
	}
	// Item 3 sees 2 earlier items: alpha in both (ln 2), beta in item 1 (ln 3).
	want := map[[2]int64]float64{{2, 1}: math.Log(2), {3, 1}: math.Log(2) + math.Log(3), {3, 2}: math.Log(2)}
	for _, e := range es {
		if w := want[[2]int64{e.Src, e.Dst}]; math.Abs(float64(e.Weight)-w) > 1e-6 {
			t.Errorf("%d>%d weight %v, want %v", e.Src, e.Dst, e.Weight, w)
		}
		if e.UserID != 7 || e.SrcTokens != steps[e.Src-1].TokenCount || e.DstTokens != steps[e.Dst-1].TokenCount {
			t.Errorf("edge %+v: owner or token counts wrong", e)
		}
	}
	// Heaviest first among an item's edges.
	if es[1].Dst != 1 || es[2].Dst != 2 {
		t.Fatalf("item 3's edges not heaviest first: %+v", es[1:])
	}
}

// TestGraphOwnersAreIndependent: another user's turns, and their purge,
// change no edge of an owner, weights included.
func TestGraphOwnersAreIndependent(t *testing.T) {
	t.Parallel()
	alone := corpus(3, 1, 120)
	var mixed []step
	for i, s := range alone {
		mixed = append(mixed, s)
		if i%3 == 0 {
			// Bob says the same words, and is purged now and then.
			b := s
			b.ID, b.Seq, b.UserID, b.ConvID = s.ID+100_000, s.Seq+100_000, 2, 99
			mixed = append(mixed, b)
		}
		if i%40 == 39 {
			mixed = append(mixed, purge(2))
		}
	}
	rules := chain.Rules{MaxDF: 4, MinWeight: 1, Near: 3}
	mine := func(es []chain.Edge) []chain.Edge {
		return slices.DeleteFunc(es, func(e chain.Edge) bool { return e.UserID != 1 })
	}
	a, m := run(fakeLex{}, rules, alone), mine(run(fakeLex{}, rules, mixed))
	if len(a) == 0 {
		t.Fatal("the corpus forms no edge: the test shows nothing")
	}
	if !reflect.DeepEqual(a, m) {
		t.Fatalf("alice's edges change with bob's turns: %d alone, %d mixed", len(a), len(m))
	}
}

// corpus is n deterministic items of user over a few conversations, from a
// small vocabulary: many ties, many words turning common.
func corpus(seed uint64, user int64, n int) []step {
	voc := strings.Fields("lake kayak lesson saturday adoption agency portland guitar concert pottery " +
		"passport trip museum sunset garden tomato recipe marathon knee doctor")
	r := rand.New(rand.NewPCG(seed, 0))
	out := make([]step, n)
	for i := range out {
		ws := make([]string, 2+r.IntN(5))
		for j := range ws {
			ws[j] = voc[r.IntN(len(voc))]
		}
		id := int64(i + 1)
		var src []int64
		if i > 2 && i%4 == 0 {
			src = []int64{id - 1, id - 2, int64(1 + r.IntN(i))}
		}
		out[i] = it(id, user, 10+int64(r.IntN(4)), strings.Join(ws, " "), src...)
	}
	return out
}

// TestGraphIsDeterministic: the same items give the same edges, in the
// same order with the same weights, every time; and every edge keeps the
// rules' shape.
func TestGraphIsDeterministic(t *testing.T) {
	t.Parallel()
	steps := cat(corpus(1, 1, 150), corpus(2, 2, 150))
	slices.SortStableFunc(steps, func(a, b step) int { return int(a.ID - b.ID) })
	for i := range steps { // unique ids across both users, in log order
		steps[i].ID, steps[i].Seq = int64(i+1), int64(i+1)
		for j := range steps[i].Sources {
			steps[i].Sources[j] = max(1, steps[i].Sources[j]*2-1)
		}
	}
	rules := chain.Rules{MaxDF: 6, MinWeight: 1.5, Near: 5, Links: 2, EvidenceLinks: 2, MinEvidence: 1}
	first := run(fakeLex{}, rules, steps)
	if len(first) < 20 {
		t.Fatalf("only %d edges: the corpus shows little", len(first))
	}
	for range 5 {
		if again := run(fakeLex{}, rules, steps); !reflect.DeepEqual(first, again) {
			t.Fatal("the same items gave other edges")
		}
	}
	owner := map[int64]int64{}
	for _, s := range steps {
		owner[s.ID] = s.UserID
	}
	per := map[string]int{}
	for _, e := range first {
		if e.Dst >= e.Src || owner[e.Src] != e.UserID || owner[e.Dst] != e.UserID || e.Weight <= 0 {
			t.Errorf("edge %+v breaks the shape", e)
		}
		per[fmt.Sprint(e.Src, e.Relation)]++
	}
	for k, n := range per {
		if n > 2 {
			t.Errorf("%s has %d edges, at most 2", k, n)
		}
	}
}

// TestGraphShippedLexicon: with the shipped lexicon the rules read,
// stopwords never link and inflected forms fold to one word.
func TestGraphShippedLexicon(t *testing.T) {
	t.Parallel()
	lex, err := dict.Builtin(chain.LexiconVersion)
	if err != nil {
		t.Fatal(err)
	}
	tok := func(id, conv int64, s string) step {
		st := it(id, 1, conv, "")
		st.Tokens = strings.Fields(strings.ToLower(s))
		return st
	}
	rules := chain.Rules{MinWeight: 1}
	if es := run(lex, rules, []step{tok(1, 1, "we were there and it was"), tok(2, 2, "we were there and it was")}); len(es) != 0 {
		t.Fatalf("stopwords linked: %v", keys(es))
	}
	es := run(lex, rules, []step{tok(1, 1, "we applied to the adoption agencies"), tok(2, 2, "the adoption agency called")})
	if got := keys(es); !slices.Equal(got, []string{"2>1 thread"}) {
		t.Fatalf("edges %v", got)
	}
	// adoption and agency, each in the one earlier item: 2 ln 2.
	if w := float64(es[0].Weight); math.Abs(w-2*math.Ln2) > 1e-6 {
		t.Fatalf("weight %v: agencies and agency are not one word", w)
	}
}

// TestGraphHugeItem: a turn with more rare words than an item is linked by
// (a pasted file) still links, by its rarest words, and its weight counts
// only those.
func TestGraphHugeItem(t *testing.T) {
	t.Parallel()
	words := make([]string, 600)
	for i := range words {
		words[i] = fmt.Sprintf("w%03d", i)
	}
	// Item 2 makes the second half of the words commoner (df 2) than the
	// first half (df 1) by the time item 3 comes.
	steps := []step{it(1, 1, 10, strings.Join(words, " ")), it(2, 1, 11, strings.Join(words[300:], " ")),
		it(3, 1, 12, strings.Join(words, " "))}
	es := run(fakeLex{}, chain.Rules{MaxDF: 8, MinWeight: 1, Links: 5}, steps)
	var to1 *chain.Edge
	for i := range es {
		if es[i].Src == 3 && es[i].Dst == 1 {
			to1 = &es[i]
		}
	}
	if to1 == nil {
		t.Fatalf("the huge turn links nothing: %v", keys(es))
	}
	// 256 words of df 1 among 2 earlier items: ln(1 + 2/1) each.
	if want := float32(256 * math.Log1p(2)); math.Abs(float64(to1.Weight-want)) > 1e-3 {
		t.Fatalf("weight %v, want %v (the 256 rarest words)", to1.Weight, want)
	}
	for _, e := range es {
		if e.Src == 3 && e.Dst == 2 {
			t.Fatalf("linked to item 2 by words commoner than 256 rarer ones: %v", keys(es))
		}
	}
}
