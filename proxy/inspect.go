package proxy

import (
	"strings"

	"github.com/perpetuity/perpetuity/memory/store"
)

// The request inspector (console /console/requests) keeps, per request,
// what the provider received from memory and what came back. It is built
// here from the frame, the tool loop and the reply only: never from the
// request's headers or body, so neither the Perpetuity key nor the
// provider's can reach it.

// maxToolResult bounds one tool result kept in a record; the model saw
// all of it, the record keeps the start (the console says so).
const maxToolResult = 16 << 10

// inspects says whether this turn is kept for the inspector: the
// inspector is on, and the turn stores memory (a probe or a request with
// capture off asked for nothing to be kept, and an unknown user has no
// one to purge it with).
func (p *Proxy) inspects(t *turn) bool {
	return p.cfg.InspectRetention > 0 && t.sw.capture && !t.sw.probe && t.who.UserID != 0
}

// inspection is the turn's record, after its reply.
func (t *turn) inspection(r reply) *store.Inspection {
	in := &store.Inspection{
		Question: t.liveText, ProviderStatus: t.upStatus, ProviderMS: float64(t.upLatency.Microseconds()) / 1000,
		Rounds: t.rounds, Reply: r.text, Interrupted: r.interrupted,
	}
	if f := t.frame; f != nil {
		in.FrameTokens, in.FrameItems, in.Trimmed, in.LeftOut = f.Tokens, f.Items, f.Trimmed, f.Left
		for _, tu := range f.Turns {
			in.Turns = append(in.Turns, store.InspectTurn{Role: tu.Role, Text: tu.Text})
		}
		for _, c := range f.Considered {
			in.Items = append(in.Items, store.InspectItem{ID: c.ID, ConvID: c.ConvID, UserID: c.UserID,
				Score: float64(c.Score), Rank: c.Rank, Heat: c.Heat, Reasons: c.Reasons.Codes(), Shown: c.Shown,
				Tokens: c.Tokens, Role: c.Role, Speaker: c.Speaker, Excerpt: c.Excerpt})
		}
	}
	if rounds := max(t.rounds, 1); r.usage.in > 0 {
		in.HarnessTokens = max(0, r.usage.in-in.FrameTokens*rounds)
	}
	for _, c := range t.loop.Calls() {
		res := c.Result
		if len(res) > maxToolResult {
			res = strings.ToValidUTF8(res[:maxToolResult], "") + "…"
		}
		in.Tools = append(in.Tools, store.InspectToolRun{Round: c.Round, Name: c.Name, Args: c.Args, Result: res,
			MS: c.Millis, Failed: c.Failed})
	}
	return in
}
