package proxy

import (
	"encoding/json"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/dialect"
	"github.com/perpetuity/perpetuity/proxy/toolloop"
)

// Memory tools in the reply (DESIGN §7): the loop itself is
// proxy/toolloop; the pipeline decides which turns get it. Tools are on
// unless X-Perpetuity-Tools: off or the upstream is declared notools, with
// recall on and a frame built (a live question). Probe mode keeps them:
// they only read. The Responses API never gets them (it is relayed
// untranslated, and its stream has no single-message shape to stitch
// rounds into), nor a request asking for several choices (n > 1).

// defaultToolRounds is the provider calls one request may take when the
// configuration says nothing.
const defaultToolRounds = 3

func (p *Proxy) toolRounds() int {
	if p.cfg.ToolRounds == 0 {
		return defaultToolRounds
	}
	return p.cfg.ToolRounds
}

// toolsFor decides whether a turn offers the memory tools.
func (p *Proxy) toolsFor(t *turn) bool {
	in := t.in
	if !t.sw.tools || !t.sw.recall || in.live < 0 || in.stateful || p.toolRounds() < 2 || t.up.noTools {
		return false
	}
	if in.dialect == dialect.OpenAIResponses || t.up.dialect == dialect.OpenAIResponses {
		return false
	}
	if raw, ok := in.fields["n"]; ok {
		var n int
		if json.Unmarshal(raw, &n) == nil && n > 1 {
			return false
		}
	}
	return true
}

// offer starts the turn's loop on the first round's request, which it
// returns with the memory tools in it.
func (p *Proxy) offer(t *turn, q memory.FrameQuery, body []byte) (*toolloop.Loop, []byte, error) {
	return toolloop.Offer(toolloop.Options{
		Dialect: t.up.dialect, Rounds: p.toolRounds(), State: memory.NewToolState(q, *t.frame),
		Tools: p.mem, Log: p.log, RequestID: t.rid,
	}, body)
}
