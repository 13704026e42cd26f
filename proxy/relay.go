package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/proxy/sse"
)

// hopHeaders are never copied between client and provider.
var hopHeaders = map[string]bool{
	"Connection": true, "Proxy-Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	"Host": true, "Content-Length": true, "Accept-Encoding": true, "Content-Encoding": true,
}

// outboundHeaders copies the caller's headers for the provider: its
// credential passes through untouched; Perpetuity's own headers stay here.
func outboundHeaders(src http.Header) http.Header {
	dst := make(http.Header, len(src))
	for k, vs := range src {
		if hopHeaders[k] || strings.HasPrefix(k, "X-Perpetuity-") {
			continue
		}
		dst[k] = append([]string(nil), vs...)
	}
	return dst
}

func copyResponseHeaders(dst, src http.Header) {
	for k, vs := range src {
		if hopHeaders[k] {
			continue
		}
		dst[k] = append([]string(nil), vs...)
	}
}

// maxUpstreamBody bounds a non-streamed provider reply held in memory.
const maxUpstreamBody = 64 << 20

// forward sends the rendered request and relays the reply, returning what
// the provider said for capture.
func (p *Proxy) forward(c echo.Context, t *turn, body []byte) (reply, error) {
	req := c.Request()
	ctx := req.Context()
	up, err := http.NewRequestWithContext(ctx, http.MethodPost, t.up.url, bytes.NewReader(body))
	if err != nil {
		return reply{}, fmt.Errorf("build upstream request: %w", err)
	}
	up.Header = outboundHeaders(req.Header)
	up.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(up)
	if err != nil {
		if ctx.Err() != nil {
			return reply{interrupted: true}, nil // the client left before the provider answered
		}
		return reply{}, &APIError{Status: http.StatusBadGateway, Kind: UpstreamError, Message: "provider unreachable: " + redactURL(err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		copyResponseHeaders(c.Response().Header(), resp.Header)
		return reply{}, &APIError{Status: resp.StatusCode, Kind: UpstreamError, Message: "provider error", Body: b,
			RetryAfter: resp.Header.Get("Retry-After")}
	}
	if isEventStream(resp.Header.Get("Content-Type")) {
		return p.relayStream(c, t, resp)
	}
	return p.relayBody(c, t, resp)
}

func (p *Proxy) relayBody(c echo.Context, t *turn, resp *http.Response) (reply, error) {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxUpstreamBody))
	if err != nil {
		if c.Request().Context().Err() != nil {
			return reply{interrupted: true}, nil
		}
		return reply{}, &APIError{Status: http.StatusBadGateway, Kind: UpstreamError, Message: "provider reply cut short"}
	}
	res := c.Response()
	copyResponseHeaders(res.Header(), resp.Header)
	res.Header().Set("Content-Length", strconv.Itoa(len(b)))
	res.WriteHeader(resp.StatusCode)
	_, _ = res.Write(b)
	r := reply{text: replyText(t.up.dialect, b)}
	r.usage = readUsage(b)
	return r, nil
}

// relayStream forwards the provider's events one by one, flushing each as
// it arrives, while collecting the reply text for capture. A stream that
// ends without its terminator, or with an in-band error, is an error for the
// client and a flagged capture, never a clean end.
func (p *Proxy) relayStream(c echo.Context, t *turn, resp *http.Response) (reply, error) {
	res := c.Response()
	h := res.Header()
	copyResponseHeaders(h, resp.Header)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	res.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(res)
	_ = rc.SetWriteDeadline(noDeadline) // streams outlive any server timeout
	if err := rc.Flush(); err != nil {
		return reply{interrupted: true}, nil
	}
	acc := newAccumulator(t.up.dialect)
	rd := sse.NewReader(resp.Body)
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if c.Request().Context().Err() != nil {
				return acc.reply(true), nil
			}
			return acc.reply(true), &APIError{Status: http.StatusBadGateway, Kind: UpstreamError, Message: "provider stream broke off before its end"}
		}
		acc.add(ev)
		if _, err := res.Write(ev.Raw); err != nil {
			return acc.reply(true), nil
		}
		if err := rc.Flush(); err != nil {
			return acc.reply(true), nil
		}
	}
	switch {
	case acc.failed:
		// The provider's own error event already reached the client.
		return acc.reply(true), nil
	case !acc.done:
		return acc.reply(true), &APIError{Status: http.StatusBadGateway, Kind: UpstreamError, Message: "provider stream ended without its terminator"}
	}
	return acc.reply(false), nil
}

// accumulator follows a stream of one dialect: the reply text, whether the
// terminator arrived and whether the provider sent an in-band error.
type accumulator struct {
	dialect Dialect
	text    strings.Builder
	usage   usage
	done    bool
	failed  bool
	stopped bool // a stop/finish reason was seen
}

func (a *accumulator) reply(interrupted bool) reply {
	return reply{text: a.text.String(), interrupted: interrupted, usage: a.usage}
}

// usage is the provider's token accounting of one reply.
type usage struct {
	in, out int
}

// wireUsage covers both dialects' usage objects.
type wireUsage struct {
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

func (w *wireUsage) merge(u *usage) {
	if w == nil {
		return
	}
	if n := w.InputTokens + w.PromptTokens; n > 0 {
		u.in = n
	}
	if n := w.OutputTokens + w.CompletionTokens; n > 0 {
		u.out = n
	}
}

func readUsage(body []byte) usage {
	var r struct {
		Usage *wireUsage `json:"usage"`
	}
	var u usage
	if json.Unmarshal(body, &r) == nil {
		r.Usage.merge(&u)
	}
	return u
}

func newAccumulator(d Dialect) *accumulator { return &accumulator{dialect: d} }

func (a *accumulator) add(ev sse.Event) {
	switch a.dialect {
	case AnthropicMessages:
		switch ev.Event {
		case "content_block_delta":
			var d struct {
				Delta struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"delta"`
			}
			if json.Unmarshal(ev.Data, &d) == nil && d.Delta.Type == "text_delta" {
				a.text.WriteString(d.Delta.Text)
			}
		case "message_start":
			var m struct {
				Message struct {
					Usage *wireUsage `json:"usage"`
				} `json:"message"`
			}
			if json.Unmarshal(ev.Data, &m) == nil {
				m.Message.Usage.merge(&a.usage)
			}
		case "message_delta":
			a.stopped = true
			var m struct {
				Usage *wireUsage `json:"usage"`
			}
			if json.Unmarshal(ev.Data, &m) == nil {
				m.Usage.merge(&a.usage)
			}
		case "message_stop":
			a.done = a.stopped
		case "error":
			a.failed = true
		}
	default:
		data := bytes.TrimSpace(ev.Data)
		if bytes.Equal(data, []byte("[DONE]")) {
			a.done = a.stopped
			return
		}
		var ch struct {
			Usage   *wireUsage      `json:"usage"`
			Error   json.RawMessage `json:"error"`
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if json.Unmarshal(data, &ch) != nil {
			return
		}
		if len(ch.Error) > 0 && !isNull(ch.Error) {
			a.failed = true
			return
		}
		ch.Usage.merge(&a.usage)
		for _, c := range ch.Choices {
			a.text.WriteString(c.Delta.Content)
			if c.FinishReason != nil && *c.FinishReason != "" {
				a.stopped = true
			}
		}
	}
}

// replyText reads the assistant's text out of a non-streamed reply.
func replyText(d Dialect, body []byte) string {
	switch d {
	case AnthropicMessages:
		var m struct {
			Content []contentPart `json:"content"`
		}
		if json.Unmarshal(body, &m) != nil {
			return ""
		}
		var b strings.Builder
		for _, p := range m.Content {
			if p.Type == "text" {
				b.WriteString(p.Text)
			}
		}
		return b.String()
	default:
		var r struct {
			Choices []struct {
				Message struct {
					Content *string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		if json.Unmarshal(body, &r) != nil || len(r.Choices) == 0 || r.Choices[0].Message.Content == nil {
			return ""
		}
		return *r.Choices[0].Message.Content
	}
}

// redactURL keeps transport errors from echoing full URLs (which may carry
// credentials in a query) back to clients.
func redactURL(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner.Error()
		}
	}
	return "connection failed"
}
