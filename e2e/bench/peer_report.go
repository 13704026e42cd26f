package bench

import (
	"fmt"
	"strconv"
	"time"
)

// PublishedPeer is a gateway's added latency as its makers publish it: on
// their machines and loads, not measured here, for context beside the
// ratio that is.
type PublishedPeer struct {
	Name  string
	Added string // milliseconds, as published
}

// PublishedPeers are the published figures section 1 quotes.
func PublishedPeers() []PublishedPeer {
	return []PublishedPeer{
		{"Portkey gateway (open source)", "2.4-2.7"},
		{"LiteLLM proxy", "4.3"},
		{"Bifrost", "0.44-0.62"},
	}
}

// PeerRatio is Perpetuity's added time over the peer's (below 1:
// Perpetuity adds less); ok is false when the peer's added time is not
// above zero, where no ratio means anything.
func PeerRatio(ours, theirs time.Duration) (ratio float64, ok bool) {
	if theirs <= 0 {
		return 0, false
	}
	return float64(ours) / float64(theirs), true
}

func ratioCell(ours, theirs time.Duration) string {
	r, ok := PeerRatio(ours, theirs)
	if !ok {
		return "– (Portkey added nothing measurable)"
	}
	return fmt.Sprintf("**%.2fx**", r)
}

// passPeer is section 1's comparison with the peer gateway.
func (r *Report) passPeer(m *mdw, p *PassResult) {
	pr := p.Peer
	if pr == nil {
		return
	}
	m.p("### Beside the Portkey gateway")
	m.p("")
	if !pr.Measured() {
		why := pr.Skipped
		if why == "" {
			why = "the run stopped before its first round"
		}
		m.p("The open-source Portkey gateway (`%s` %s) was to be measured here in Perpetuity's place; it was", pr.Package, pr.Version)
		m.p("not: %s. The rest of the run went on without it.", why)
		m.p("")
		r.publishedPeers(m)
		return
	}
	how := "reused from an earlier run's install in the user's cache"
	if pr.Installed {
		how = "installed by this run into the user's cache, outside the repository"
	}
	m.p("The open-source Portkey gateway in Perpetuity's place: `%s` %s from npm (`%s` pinned to %s; %s),", pr.Package, pr.Version,
		honoServerPackage, honoServerVersion, how)
	m.p("run with Node %s as `node %s --headless`, in front of the same fake provider (`%s: openai`,", pr.Node, portkeyScript, portkeyProviderHeader)
	m.p("`%s` the fake's URL). The same request, pairs per round, concurrency and stream count as the rows", portkeyHostHeader)
	m.p("above, in the same %d rounds, each pair against the fake provider called directly. Before the rounds %d", pr.C1.Rounds, pr.Sent)
	m.p("requests went through it and the fake provider answered %d: it forwarded them. Its warm-up is four times", pr.Forwarded)
	m.p("Perpetuity's (Node compiles its hot paths as they run). Headless, it prints nothing per request and its")
	m.p("output is discarded; it still builds an entry for its console's live log of every request (parsing a copy")
	m.p("of each plain reply), which is part of its server and stays in its figures. Its stream relay waits 25 ms")
	m.p("before it passes on the first event (a fixed pause in its stream reader), which its time to first event")
	m.p("carries. The newest `%s` its manifest allows fails every stream through it with a 500 (Portkey's", honoServerPackage)
	m.p("issue 1389), hence the pin. Milliseconds.")
	m.p("")
	row := func(label string, x Paired) []string {
		return []string{label, ms(x.Base.P50), ms(x.Base.P99), ms(x.Subj.P50), ms(x.Subj.P99),
			"**" + ms(x.Added50) + "**", "**" + ms(x.Added99) + "**", spread(x.Added50Lo, x.Added50Hi), strconv.Itoa(x.PerSide)}
	}
	m.table([]string{"", "direct p50", "direct p99", "via Portkey p50", "p99", "added p50", "added p99", "added p50 spread", "pairs/round"}, [][]string{
		row("non-streaming, concurrency 1", pr.C1),
		row(fmt.Sprintf("non-streaming, concurrency %d", pr.Concurrency), pr.CMany),
		row("streaming: time to first event", pr.TTFB),
	})
	if pr.Failed > 0 {
		m.p("%d pairs were dropped because a request failed.", pr.Failed)
		m.p("")
	}
	m.p("Perpetuity's added time over Portkey's, both measured in this run (below 1: Perpetuity adds less):")
	m.p("")
	ratio := func(label string, ours, theirs Paired) []string {
		return []string{label, ms(ours.Added50), ms(theirs.Added50), ratioCell(ours.Added50, theirs.Added50),
			ms(ours.Added99), ms(theirs.Added99), ratioCell(ours.Added99, theirs.Added99)}
	}
	m.table([]string{"", "Perpetuity added p50", "Portkey added p50", "ratio p50", "Perpetuity added p99", "Portkey added p99", "ratio p99"}, [][]string{
		ratio("non-streaming, concurrency 1", p.C1, pr.C1),
		ratio(fmt.Sprintf("non-streaming, concurrency %d", pr.Concurrency), p.CMany, pr.CMany),
		ratio("streaming: time to first event", p.TTFB, pr.TTFB),
	})
	r.publishedPeers(m)
}

func (r *Report) publishedPeers(m *mdw) {
	rows := make([][]string, 0, len(PublishedPeers()))
	for _, pp := range PublishedPeers() {
		rows = append(rows, []string{pp.Name, pp.Added})
	}
	m.p("For context, the added latency gateways' makers publish for their own, as published by them and not")
	m.p("measured here (other machines, loads and requests): only the ratio above is measured in this run.")
	m.p("")
	m.table([]string{"gateway", "published added latency (ms)"}, rows)
}
