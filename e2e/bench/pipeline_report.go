package bench

import (
	"fmt"
	"time"
)

// pipeSplit is where one §2 row's added p50 goes, from the proxied
// requests' Server-Timing: the proxy's memory work, its other handling
// before it forwarded the request, the provider's answer beyond what the
// direct request took, and what the client waited outside the server's
// timed window (its hop, the server before the handler, the reply's way
// back). Each is a p50 of its own, so they do not add up exactly.
// sizeCost is what a direct request of upBytes costs the provider over the
// plain question.
type pipeSplit struct {
	label                                              string
	added, memory, handling, upstream, direct, outside time.Duration
	extra, sizeCost                                    time.Duration
	upBytes                                            int
}

func splitOf(label string, p PipelineResult) (pipeSplit, bool) {
	if p.Memory.N == 0 || p.Memory.P50 == 0 {
		return pipeSplit{}, false // a server without Server-Timing
	}
	s := pipeSplit{label: label, added: p.Added50, memory: p.Memory.P50, handling: p.Handling.P50, upstream: p.Upstream.P50,
		direct: p.Base.P50, outside: p.Outside.P50, sizeCost: p.Sized.Added50, upBytes: p.UpBytes}
	s.extra = s.upstream - s.direct
	return s, true
}

// labeledPipe is one row of §2 with its label.
type labeledPipe struct {
	label string
	PipelineResult
}

// pipelineRows are §2's rows in the report's order: at each size the bench
// tenant, its twin on v3, and the v3 twin whose provider takes its time.
func (r *Report) pipelineRows() []labeledPipe {
	var out []labeledPipe
	for _, p := range r.Pipeline {
		out = append(out, labeledPipe{itemsLabel(p.Items) + " items", p})
		if p3, ok := at(r.PipelineV3, p.Items); ok {
			out = append(out, labeledPipe{itemsLabel(p.Items) + " items, v3", p3})
		}
		if p3, ok := at(r.PipelineV3Thinking, p.Items); ok {
			out = append(out, labeledPipe{itemsLabel(p.Items) + " items, v3, provider answers in " + ms(thinkingTime) + " ms", p3})
		}
	}
	return out
}

// pipelineSplits writes the table of where §2's added time goes.
func (r *Report) pipelineSplits(m *mdw) {
	var rows [][]string
	for _, lp := range r.pipelineRows() {
		if s, ok := splitOf(lp.label, lp.PipelineResult); ok {
			rows = append(rows, []string{s.label, ms(s.added), ms(s.memory), ms(s.handling), ms(s.upstream), ms(s.direct), ms(s.extra), ms(s.sizeCost), kB(s.upBytes), ms(s.outside)})
		}
	}
	if len(rows) == 0 {
		return
	}
	m.p("")
	m.p("Where the added time goes, from the `Server-Timing` header of each proxied request (p50 over the rounds):")
	m.p("\"memory\" is the proxy's capture of the question with the frame built beside it; \"handling\" the rest of the")
	m.p("proxy's work before it forwarded the request (reading and parsing it, the key and conversation lookups, splicing")
	m.p("the frame in and encoding the request); \"provider, proxied\" the time from the proxy beginning to forward the")
	m.p("request until its answer began (sending it, the provider's whole answer and reading it: these requests are not")
	m.p("streamed), set against the whole direct request; \"size alone\" the provider called directly, in the same rounds, with")
	m.p("a request as large as the proxied one (a padded system message; \"request\" its median size) against the plain")
	m.p("question: the share of the provider's extra that the frame's bytes cost the provider, whoever sends them;")
	m.p("\"outside\" what the client waited beyond Server-Timing's forward and upstream spans (the client's hop, the")
	m.p("server before the handler, the reply's way back), request by request. Each column")
	m.p("is a p50 of its own, so they do not add up to the added p50 exactly. Milliseconds.")
	m.p("")
	m.table([]string{"", "added p50", "memory p50", "handling p50", "provider, proxied p50", "direct p50", "provider's extra", "size alone", "request (kB)", "outside"}, rows)
}

// targetSplit says, from the Server-Timing split, where the target row's
// added p50 goes; mp is the memory path at the same size and dictionary.
func (r *Report) targetSplit(pl *PipelineResult, mp *MemPathResult) (string, bool) {
	if pl == nil || mp == nil {
		return "", false
	}
	s, ok := splitOf("", *pl)
	if !ok {
		return "", false
	}
	out := fmt.Sprintf("The pipeline adds %s ms at p50 over calling the provider directly. Its requests' Server-Timing (§2's second"+
		" table) splits it: memory %s ms, the proxy's other handling before it forwarded %s ms, the provider's answer %s ms longer"+
		" than the direct request's, %s ms outside the server's timed spans (each a p50 of its own).",
		ms(s.added), ms(s.memory), ms(s.handling), ms(s.extra), ms(s.outside))
	if more := s.memory - mp.Total.P50; more > 0 {
		out += fmt.Sprintf(" Memory takes %s ms more in the pipeline than the memory path alone (%s ms), whose turns have nothing"+
			" beside them; here each response is followed at once by the next request, while the previous reply's capture (which"+
			" holds the tenant's head lock the next live capture waits for) and its request record (with the inspector's copy of"+
			" the frame, written at once so that a purge finds it: proxy/records.go) are still being written, on the same cores.",
			ms(more), ms(mp.Total.P50))
	}
	out += " The provider's answer, proxied, also holds what the direct request has not: sending the frame (thousands of" +
		" tokens where the direct request holds one exchange), the fake provider reading it, and the proxy reading the whole" +
		" reply before it answers."
	if s.upBytes > 0 {
		out += fmt.Sprintf(" Called directly with a request as large (%s kB), the provider takes %s ms longer than with the plain"+
			" question: that much of its extra is the frame's size, whoever sends it.", kB(s.upBytes), ms(s.sizeCost))
	}
	if th, ok := at(r.PipelineV3Thinking, pl.Items); ok {
		if t, ok := splitOf("", th); ok {
			out += fmt.Sprintf(" Where the provider takes %s ms on both sides (the row so marked): memory %s ms, the provider's"+
				" extra %s ms, %s ms added in all.", ms(thinkingTime), ms(t.memory), ms(t.extra), ms(t.added))
		}
	}
	return out, true
}
