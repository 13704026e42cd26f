package memory

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/memory/text"
)

// BenchmarkRenderFit renders a frame of 80 stored turns the way fit does at
// 250k items: once with everything chosen, then again with the last few
// dropped (the first render overshoots the budget by its headers). "first
// frame" starts from an empty count cache each time; "later frames" keeps
// it, as a process does that rendered these turns before.
func BenchmarkRenderFit(b *testing.B) {
	c, err := text.NewCounter()
	if err != nil {
		b.Fatal(err)
	}
	words := strings.Fields("the garden tomatoes basil neighbour Caroline stakes spring peppers beans squash raised beds " +
		"support group yesterday painting camping lake mountains adoption counselling career music concert " +
		"friends family weekend trip photos recipe dinner bakery running marathon training school kids")
	rng := rand.New(rand.NewPCG(1, 2))
	byID := map[int64]store.RenderItem{}
	var chosen []cand
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range 80 {
		var sb strings.Builder
		for w := range 25 + rng.IntN(50) {
			if w > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(words[rng.IntN(len(words))])
		}
		sb.WriteByte('.')
		body := sb.String()
		id := int64(1000 + i)
		byID[id] = store.RenderItem{ID: id, MessageID: id, UserID: 1, ConvID: int64(1 + i/10), Role: []string{"user", "assistant"}[i%2],
			Speaker: []string{"Caroline", "Melanie"}[i%2], Body: body, TokenCount: c.Count(body), BornAt: at.Add(time.Duration(i) * time.Hour)}
		chosen = append(chosen, cand{id: id})
	}
	q := FrameQuery{Who: Who{TenantID: 1, UserID: 1, UserName: "Caroline", ConversationID: 8},
		Live: "what did Caroline say about the tomatoes", LiveStored: true, Now: at.Add(200 * time.Hour)}
	for _, bc := range []struct {
		name  string
		fresh bool
	}{{"first frame", true}, {"later frames", false}} {
		b.Run(bc.name, func(b *testing.B) {
			e := &Engine{an: TextAnalyzer{C: c}, counts: newCountCache(countCacheEntries)}
			b.ReportAllocs()
			for b.Loop() {
				if bc.fresh {
					e.counts = newCountCache(countCacheEntries)
				}
				count, labels := e.frameCount(), turnLabels{}
				if f := e.render(q, chosen, byID, false, count, labels); f.Tokens == 0 {
					b.Fatal("nothing rendered")
				}
				if f := e.render(q, chosen[:len(chosen)-3], byID, true, count, labels); f.Tokens == 0 {
					b.Fatal("nothing rendered")
				}
			}
		})
	}
}
