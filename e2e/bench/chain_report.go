package bench

import (
	"fmt"
	"strings"
	"time"

	"github.com/perpetuity/perpetuity/memory/chain"
)

// chain writes section 8.
func (r *Report) chain(m *mdw) {
	c := r.Chain
	if c == nil {
		return
	}
	m.p("## 8. Chain graph writer")
	m.p("")
	m.p("The chain graph's one writer (memory/chain, `chain.NewWriter` with the shipped rules and lexicon v%d), in-process", chain.LexiconVersion)
	m.p("after the server stopped, on the bench tenant: %s items loaded, %d in its log with what the sections above", itemsLabel(c.Loaded), c.Items)
	m.p("captured into it. The tenant's chain was reset first (its edges and watermark deleted as the database owner, then")
	m.p("vacuumed), so **from scratch** is a fresh writer's `CatchUp` from watermark 0: it reads the log in batches of")
	m.p("2000 positions, derives each item's edges and stores each batch's edges with the watermark in one transaction,")
	m.p("as serve's writer catches up a tenant. **Restart** is a second fresh writer on the same tenant, already at its")
	m.p("watermark (%d): it replays the items into its graph (deriving nothing) and reads the stored edges back, what a", c.Seq)
	m.p("new serving process pays once per tenant; %d rounds, after `chain_edges` was analyzed as autovacuum would have.", c.Rounds)
	m.p("Read and write are the time inside the store's calls; the rest is the rules and the in-memory edges.")
	m.p("")
	m.table([]string{"", "items", "took (ms)", "spread", "read", "write", "rules", "items/s", "edges", "peak Go heap", "Go heap B/item after"}, [][]string{
		{"from scratch (watermark 0)", fmt.Sprint(c.Items), ms(c.Took), "–", ms(c.Read), ms(c.Write), ms(max(0, c.Took-c.Read-c.Write)),
			fmt.Sprintf("**%.0fk**", c.PerSec/1000), fmt.Sprintf("%d written", c.Edges), fmt.Sprintf("+%.0f MiB", float64(c.PeakHeap)/(1<<20)),
			fmt.Sprintf("%.0f", c.HeapPerItem)},
		{"restart (at the watermark)", fmt.Sprint(c.Items), ms(c.Restart), spread(c.RestartLo, c.RestartHi), ms(c.RestartRead), "–",
			ms(max(0, c.Restart-c.RestartRead)), fmt.Sprintf("**%.0fk**", c.RestartPerSec/1000), fmt.Sprintf("%d read", c.RestartEdges), "–", "–"},
	})
	parts := []string{fmt.Sprintf("restart / from scratch **%.2fx**", c.RestartRatio())}
	if cold, ok := at(r.Cold, c.Loaded); ok {
		parts = append(parts, fmt.Sprintf("restart / the arena's cold start of the same tenant (§5, %s ms) **%.2fx**",
			ms(cold.Took), float64(c.Restart)/float64(max(1, cold.Took))))
	}
	if c.Edges > 0 {
		parts = append(parts, fmt.Sprintf("%.2f edges per item", float64(c.Edges)/float64(max(1, c.Items))))
	}
	m.p("%s.", strings.Join(parts, "; "))
	if c.RestartEdges != c.Edges || c.RestartWritten > 0 {
		m.p("**A restart read back %d edges where %d were written, and wrote %d itself.**", c.RestartEdges, c.Edges, c.RestartWritten)
	}
	m.p("")
}

// chainSettles is the Setup section's line on the served writer.
func (r *Report) chainSettles(m *mdw) {
	if len(r.ChainSettles) == 0 {
		return
	}
	parts := make([]string, len(r.ChainSettles))
	for i, s := range r.ChainSettles {
		parts[i] = fmt.Sprintf("%s in %s", strings.TrimSpace(itemsLabel(s.Items)+" "+s.Tenant), s.Took.Round(time.Millisecond))
		if !s.Caught {
			parts[i] += " (still behind: §2 ran beside it)"
		}
		if s.CheckpointErr != "" {
			parts[i] += " (no checkpoint: " + s.CheckpointErr + ")"
		} else {
			parts[i] += fmt.Sprintf(", checkpoint %s", s.Checkpoint.Round(time.Millisecond))
		}
	}
	m.p("After each growth the first request of §2 kicked the served chain writer, and §2 waited for it to derive the")
	m.p("growth's edges (as captures' edges follow them in serving), then for a CHECKPOINT, so that the growth's")
	m.p("writes (hundreds of MB of WAL in seconds, which captures never make) are not checkpointed during the")
	m.p("measured rounds: %s.", strings.Join(parts, "; "))
}
