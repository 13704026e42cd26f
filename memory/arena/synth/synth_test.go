package synth_test

import (
	"reflect"
	"testing"

	"github.com/perpetuity/perpetuity/memory/arena"
	"github.com/perpetuity/perpetuity/memory/arena/synth"
)

func TestCorpusIsDeterministic(t *testing.T) {
	t.Parallel()
	cfg := synth.Config{Seed: 5, Items: 3000, Users: 7}
	a, b := synth.Corpus(cfg), synth.Corpus(cfg)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different corpus")
	}
	cfg.Seed = 6
	if reflect.DeepEqual(a, synth.Corpus(cfg)) {
		t.Fatal("different seeds, same corpus")
	}
}

func TestCorpusShape(t *testing.T) {
	t.Parallel()
	g := synth.New(synth.Config{Seed: 1, Items: 20000, Users: 10})
	items := g.Corpus()
	ids := map[int64]bool{}
	users := map[int64]int{}
	df := map[arena.TermID]int{}
	var tokens, names int
	for i, it := range items {
		if ids[it.ID] {
			t.Fatalf("duplicate id %d", it.ID)
		}
		ids[it.ID] = true
		users[it.User]++
		if i > 0 && it.Seq <= items[i-1].Seq {
			t.Fatalf("seq not increasing at %d", i)
		}
		if len(it.Terms) == 0 || len(it.Terms) != len(it.Freqs) {
			t.Fatalf("item %d: %d terms, %d freqs", i, len(it.Terms), len(it.Freqs))
		}
		sum := 0
		for j, term := range it.Terms {
			if j > 0 && term <= it.Terms[j-1] {
				t.Fatalf("item %d terms not sorted and distinct", i)
			}
			sum += int(it.Freqs[j])
			df[term]++
			if term >= synth.NameBase {
				names++
			}
		}
		if sum != int(it.Length) {
			t.Fatalf("item %d: length %d, freqs sum to %d", i, it.Length, sum)
		}
		tokens += sum
	}
	if len(users) != 10 {
		t.Fatalf("%d users, want 10", len(users))
	}
	if mean := float64(tokens) / float64(len(items)); mean < 18 || mean > 35 {
		t.Fatalf("mean turn length %.1f tokens, want chat-turn sized (18-35)", mean)
	}
	if names == 0 {
		t.Fatal("no unknown words (names) generated")
	}
	// Zipf: the most frequent rank is in most turns, rank 1000 in few.
	top, mid := df[g.TermOfRank(0)], df[g.TermOfRank(1000)]
	if top < len(items)/2 || mid > len(items)/100 || mid == 0 {
		t.Fatalf("df(rank 0)=%d df(rank 1000)=%d: not Zipfian", top, mid)
	}
}

func TestQueries(t *testing.T) {
	t.Parallel()
	g := synth.New(synth.Config{Seed: 2, Items: 500, Users: 3})
	items := g.Corpus()
	for _, q := range g.Queries(items, 100, 3, 8) {
		if len(q.Terms) < 3 || len(q.Terms) > 8 || len(q.Users) != 1 || q.Users[0] < 1 || q.Users[0] > 3 || q.K != 50 {
			t.Fatalf("bad query %+v", q)
		}
	}
}
