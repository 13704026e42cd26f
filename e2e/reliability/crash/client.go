// Package crash holds issue 9's crash test (item 1: the server killed with
// SIGKILL while it captures) and what the reliability tests that break
// things share: a chat client whose every turn carries a unique marker and
// knows when it was acknowledged, a fake-provider reply that names the
// marker it answers, and the audit that compares what clients were told with
// what the database holds (DBRestart, item 2, uses it too).
//
// "Acknowledged" is what a client may rely on: a 2xx status with a complete
// body (non-streaming) or the stream's final event (OpenAI `data: [DONE]`,
// Anthropic `message_stop`), carrying the whole expected reply. Every
// acknowledged turn's user message must be in the database: capture commits
// it before the request is forwarded (DESIGN §2, §4).
package crash

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/proxy/sse"
)

// Kind is the dialect and mode a turn is sent in.
type Kind int

const (
	OpenAIJSON Kind = iota
	OpenAIStream
	AnthropicJSON
	AnthropicStream
	kinds
)

func (k Kind) String() string {
	return [...]string{"openai-json", "openai-stream", "anthropic-json", "anthropic-stream"}[k]
}

// Anthropic reports whether the turn speaks the Anthropic dialect.
func (k Kind) Anthropic() bool { return k == AnthropicJSON || k == AnthropicStream }

// Stream reports whether the turn asks for a stream.
func (k Kind) Stream() bool { return k == OpenAIStream || k == AnthropicStream }

// RandomKind picks one of the four kinds.
func RandomKind() Kind { return Kind(mrand.IntN(int(kinds))) }

// markerLen is the letters after "mk": 26^12 makes a collision between two
// turns of one run practically impossible.
const markerLen = 12

var markerRE = regexp.MustCompile(`mk[a-z]{12}`)

// NewMarker is a fresh marker: one word the dictionary cannot know, so it
// stays retrievable and greps back out of any body.
func NewMarker() string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, markerLen)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	return "mk" + string(b)
}

// ReplyText is what the fake provider answers to the turn marked m.
func ReplyText(m string) string {
	return "reply " + m + " noted and filed with the usual care for later"
}

// Reply is the fake provider's default (fakeprovider.SetDefault): it answers
// ReplyText of the last marker in the request (the live question closes the
// frame, so its marker is the last one), streamed a word at a time with a
// little random pacing, so kills also land mid-stream.
func Reply(r fakeprovider.Recorded) fakeprovider.Reply {
	ms := markerRE.FindAll(r.Body, -1)
	if len(ms) == 0 {
		return fakeprovider.Reply{}
	}
	return fakeprovider.Reply{
		Text:           ReplyText(string(ms[len(ms)-1])),
		ChunkDelay:     time.Duration(mrand.IntN(3000)) * time.Microsecond,
		FirstByteDelay: time.Duration(mrand.IntN(5000)) * time.Microsecond,
	}
}

// Turn is one chat request and what came of it.
type Turn struct {
	Client  int
	Kind    Kind
	Marker  string
	Text    string // the user message sent; stored verbatim when captured
	Sent    time.Time
	Headers time.Time // response headers arrived (zero: none)
	Done    time.Time
	Status  int // 0: no response
	// Acked: 2xx with the complete expected reply and the dialect's end.
	Acked bool
	// Misanswered: a complete reply that answers another turn's marker (the
	// frame did not end with this turn's question).
	Misanswered bool
	// Body is the response body of a non-2xx answer.
	Body []byte
	// Err says why a turn that was answered 2xx is not acknowledged, or why
	// no answer came.
	Err error
}

// Client sends turns to one proxy base URL (http://host:port/k/<key>).
type Client struct {
	Base         string
	HTTP         *http.Client
	Conversation string // X-Perpetuity-Conversation; empty: derived by the proxy
}

// UserText is the user message of a turn marked m; the marker comes last so
// Reply finds it even when the text names an earlier marker.
func UserText(client, n int, m string) string {
	return fmt.Sprintf("client %d turn %d asks to keep this: %s", client, n, m)
}

// RecallText asks about an earlier turn's marker; its own marker comes last.
func RecallText(client, n int, earlier, m string) string {
	return fmt.Sprintf("what did I say about %s before? client %d turn %d: %s", earlier, client, n, m)
}

// Send sends one turn and fills in what came back. It never fails: the
// outcome is in the Turn.
func (c *Client) Send(ctx context.Context, tr *Turn) {
	tr.Sent = time.Now()
	defer func() { tr.Done = time.Now() }()
	req, err := c.request(ctx, tr)
	if err != nil {
		tr.Err = err
		return
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		tr.Err = err
		return
	}
	defer resp.Body.Close()
	tr.Headers, tr.Status = time.Now(), resp.StatusCode
	if resp.StatusCode/100 != 2 {
		tr.Body, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return
	}
	var text string
	switch {
	case tr.Kind.Stream():
		text, err = readStream(resp.Body, tr.Kind.Anthropic())
	default:
		text, err = readJSON(resp.Body, tr.Kind.Anthropic())
	}
	if err == nil && text != ReplyText(tr.Marker) {
		err = fmt.Errorf("reply %q, want %q", text, ReplyText(tr.Marker))
		tr.Misanswered = markerRE.FindString(text) != ""
	}
	tr.Err, tr.Acked = err, err == nil
}

func (c *Client) request(ctx context.Context, tr *Turn) (*http.Request, error) {
	msgs := []map[string]string{{"role": "user", "content": tr.Text}}
	body := map[string]any{"model": "gpt-4o-mini", "stream": tr.Kind.Stream(), "messages": msgs}
	path := "/v1/chat/completions"
	if tr.Kind.Anthropic() {
		body = map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 256, "stream": tr.Kind.Stream(), "messages": msgs}
		path = "/v1/messages"
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Base+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if tr.Kind.Anthropic() {
		req.Header.Set("x-api-key", "sk-ant-test")
		req.Header.Set("anthropic-version", "2023-06-01")
	} else {
		req.Header.Set("Authorization", "Bearer sk-test")
	}
	if c.Conversation != "" {
		req.Header.Set("X-Perpetuity-Conversation", c.Conversation)
	}
	return req, nil
}

func readJSON(r io.Reader, anthropic bool) (string, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return "", fmt.Errorf("read body: %w", err)
	}
	if anthropic {
		var m struct {
			Content []struct {
				Type, Text string
			} `json:"content"`
			StopReason string `json:"stop_reason"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return "", fmt.Errorf("body %q: %w", b, err)
		}
		if m.StopReason != "end_turn" || len(m.Content) != 1 {
			return "", fmt.Errorf("incomplete message: %s", b)
		}
		return m.Content[0].Text, nil
	}
	var cc struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &cc); err != nil {
		return "", fmt.Errorf("body %q: %w", b, err)
	}
	if len(cc.Choices) != 1 || cc.Choices[0].FinishReason != "stop" {
		return "", fmt.Errorf("incomplete completion: %s", b)
	}
	return cc.Choices[0].Message.Content, nil
}

// errNoEnd is a stream that stopped before the dialect's final event.
var errNoEnd = errors.New("stream ended before its final event")

// readStream reads the stream to its final event and returns the text it
// carried; an in-band error or a cut stream is an error.
func readStream(r io.Reader, anthropic bool) (string, error) {
	rd := sse.NewReader(r)
	var text strings.Builder
	for {
		ev, err := rd.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return text.String(), errNoEnd
			}
			return text.String(), fmt.Errorf("%w: %w", errNoEnd, err)
		}
		if anthropic {
			var e struct {
				Type  string `json:"type"`
				Delta struct {
					Type, Text string
				} `json:"delta"`
			}
			if err := json.Unmarshal(ev.Data, &e); err != nil {
				return text.String(), fmt.Errorf("event %q: %w", ev.Data, err)
			}
			switch e.Type {
			case "content_block_delta":
				text.WriteString(e.Delta.Text)
			case "error":
				return text.String(), fmt.Errorf("in-band error: %s", ev.Data)
			case "message_stop":
				return text.String(), nil
			}
			continue
		}
		if string(ev.Data) == "[DONE]" {
			return text.String(), nil
		}
		var ch struct {
			Error   json.RawMessage `json:"error"`
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(ev.Data, &ch); err != nil {
			return text.String(), fmt.Errorf("event %q: %w", ev.Data, err)
		}
		if len(ch.Error) > 0 {
			return text.String(), fmt.Errorf("in-band error: %s", ev.Data)
		}
		for _, c := range ch.Choices {
			text.WriteString(c.Delta.Content)
		}
	}
}

// DialectError reports whether body is the error JSON of the turn's
// dialect: Anthropic {"type":"error","error":{"type","message"}}, OpenAI
// {"error":{"message","type"}}.
func DialectError(k Kind, body []byte) bool {
	if k.Anthropic() {
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type, Message string
			} `json:"error"`
		}
		return json.Unmarshal(body, &e) == nil && e.Type == "error" && e.Error.Type != "" && e.Error.Message != ""
	}
	var e struct {
		Error *struct {
			Message, Type string
		} `json:"error"`
	}
	return json.Unmarshal(body, &e) == nil && e.Error != nil && e.Error.Message != "" && e.Error.Type != ""
}
