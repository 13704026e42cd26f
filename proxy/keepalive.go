package proxy

import (
	"time"

	"github.com/perpetuity/perpetuity/proxy/dialect"
	"github.com/perpetuity/perpetuity/proxy/wire/anthropic"
)

// With the memory tools offered, a round's calls of the harness's own
// tools are held back until the round ends (a round that also called
// memory makes them again in the next one: proxy/toolloop), and a
// translated stream drops events the client's dialect has no word for.
// A model writing a long file as a tool call's arguments streamed nothing
// to the client for minutes, and front proxies that cut idle streams (60
// seconds is common) cut it. While events are held, the client gets its
// dialect's keepalive: Anthropic's ping event, which its SDKs skip, and an
// SSE comment line for OpenAI's, which every SSE reader skips.

// defaultKeepAlive is Config.KeepAlive's default: well inside the idle
// timeouts of common front proxies.
const defaultKeepAlive = 15 * time.Second

// The keepalives as they go out: Anthropic's ping event as its API sends
// it, an SSE comment line.
const (
	anthropicPing = "event: " + anthropic.EventPing + "\ndata: {\"type\": \"" + anthropic.EventPing + "\"}\n\n"
	sseComment    = ": keepalive\n\n"
)

func (p *Proxy) keepAliveEvery() time.Duration {
	if p.cfg.KeepAlive > 0 {
		return p.cfg.KeepAlive
	}
	return defaultKeepAlive
}

// keepAlive writes the client's keepalive when nothing has gone out for
// the interval; false means the client is gone or stopped reading.
func (rl *relayer) keepAlive() bool {
	now := time.Now()
	if now.Sub(rl.wrote) < rl.p.keepAliveEvery() {
		return true
	}
	ka := sseComment
	if rl.t.in.dialect == dialect.AnthropicMessages {
		ka = anthropicPing
	}
	rl.wrote = now
	return writeFlush(rl.res, rl.rc, rl.p.writeStall(), []byte(ka))
}
