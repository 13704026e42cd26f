package text

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// chatTurns is a deterministic stand-in for the turns a frame renders:
// English chat with names, numbers, dates, punctuation (typographic quotes
// and dashes too, as models write them), lists, paths, URLs and code, in
// turns of a few sentences to a few paragraphs. The generator is seeded, so
// every run (and every commit benchmarked against another) counts the same
// text.
var chatTurns = sync.OnceValue(func() []string {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	names := []string{"Caroline", "Melanie", "Jon", "Gina", "Dr. Okafor", "Priya", "Tomasz", "Brzęczyszczykiewicz", "O'Neil", "McDonald", "Aiko", "José", "Zoë", "Sven", "Fatima"}
	places := []string{"Lisbon", "the office", "Kraków", "São Paulo", "the gym", "Seattle", "grandma's house", "Tokyo", "the support group", "Reykjavík"}
	things := []string{"the quarterly report", "a pottery class", "the new API", "my sister's wedding", "the Kubernetes cluster", "a charity run", "the CI pipeline", "our 10th anniversary", "the LGBTQ+ meetup", "a 5k race", "the database migration", "her adoption papers"}
	verbs := []string{"finished", "started", "postponed", "talked about", "signed up for", "reviewed", "couldn't stop thinking about", "organized", "debugged", "painted"}
	feelings := []string{"excited", "exhausted", "a bit nervous", "really proud", "overwhelmed", "grateful", "SO happy", "frustrated", "curious", "relieved"}
	months := []string{"January", "March", "May", "July", "September", "November"}
	sentences := []func() string{
		func() string {
			return fmt.Sprintf("Hey %s! I %s %s yesterday and I'm %s about it.", pick(names), pick(verbs), pick(things), pick(feelings))
		},
		func() string {
			return fmt.Sprintf("%s said we'd meet in %s on %s %d, %d at %d:%02d.", pick(names), pick(places), pick(months), 1+rng.IntN(28), 2019+rng.IntN(7), 1+rng.IntN(12), rng.IntN(60))
		},
		func() string {
			return fmt.Sprintf("Did you hear that %s %s %s? That's wild!!", pick(names), pick(verbs), pick(things))
		},
		func() string {
			return fmt.Sprintf("It cost $%d.%02d (about %d%% more than last year), which isn't great.", 10+rng.IntN(5000), rng.IntN(100), 1+rng.IntN(60))
		},
		func() string {
			return fmt.Sprintf("Honestly, I've been %s since %s - the move to %s took %d weeks.", pick(feelings), pick(months), pick(places), 2+rng.IntN(20))
		},
		func() string {
			return fmt.Sprintf("\"We're going to %s,\" %s told me, \"and you're coming too.\"", pick(places), pick(names))
		},
		func() string {
			return fmt.Sprintf("Could you check %s again? The error was: connection refused (code %d).", pick(things), 100+rng.IntN(900))
		},
		func() string {
			return fmt.Sprintf("Thanks so much... I really appreciate it :) See you at %s!", pick(places))
		},
		func() string {
			return fmt.Sprintf("The file is at /home/%s/projects/app-%d/src/main.go, line %d.", strings.ToLower(pick([]string{"jon", "priya", "sven", "gina"})), rng.IntN(40), 1+rng.IntN(900))
		},
		func() string {
			return fmt.Sprintf("See https://example.com/docs/v%d/%s?page=%d#section-%d for details.", 1+rng.IntN(4), pick([]string{"setup", "faq", "billing", "auth"}), rng.IntN(20), rng.IntN(9))
		},
		func() string {
			return fmt.Sprintf("That’s a fair point — %s’s take on %s isn’t wrong, and you’ll see why.", pick(names), pick(things))
		},
		func() string {
			return fmt.Sprintf("“%s can wait,” %s wrote. “Let’s focus on %s first…”", pick(things), pick(names), pick(things))
		},
	}
	paragraph := func() string {
		var b strings.Builder
		for i, n := 0, 2+rng.IntN(5); i < n; i++ {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(sentences[rng.IntN(len(sentences))]())
		}
		return b.String()
	}
	code := func() string {
		return fmt.Sprintf("```go\nfunc total%d(xs []int) (sum int) {\n\tfor _, x := range xs {\n\t\tsum += x * %d\n\t}\n\treturn sum // TODO(%s): overflow?\n}\n```",
			rng.IntN(100), 1+rng.IntN(9), strings.ToLower(pick(names[:4])))
	}
	list := func() string {
		var b strings.Builder
		for i, n := 0, 2+rng.IntN(4); i < n; i++ {
			fmt.Fprintf(&b, "%d. %s %s\n", i+1, pick(verbs), pick(things))
		}
		return b.String()
	}
	turns := make([]string, 100)
	for i := range turns {
		var b strings.Builder
		for j, n := 0, 1+rng.IntN(3); j < n; j++ {
			if j > 0 {
				b.WriteString("\n\n")
			}
			switch k := rng.IntN(10); {
			case k == 0:
				b.WriteString(code())
			case k == 1:
				b.WriteString(list())
			default:
				b.WriteString(paragraph())
			}
		}
		turns[i] = b.String()
	}
	return turns
})

// BenchmarkCountChat counts a frame's worth of chat turns one turn at a
// time, as rendering does: the same turns on every request, so the piece
// cache is warm after the first iteration.
func BenchmarkCountChat(b *testing.B) {
	c := testCounter(b)
	turns := chatTurns()
	size := 0
	for _, s := range turns {
		size += len(s)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range turns {
			c.Count(s)
		}
	}
}

// TestChatTurnsMatchTiktoken holds the benchmark's text to the reference
// too: it is the realistic mix the fast paths are tuned for.
func TestChatTurnsMatchTiktoken(t *testing.T) {
	t.Parallel()
	c := testCounter(t)
	for _, s := range chatTurns() {
		if got, want := c.Count(s), referenceCount(t, s); got != want {
			t.Errorf("Count(%q) = %d, tiktoken-go says %d", s, got, want)
		}
	}
}
