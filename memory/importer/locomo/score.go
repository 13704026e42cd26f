package locomo

import (
	"encoding/json"
	"fmt"
	"strings"
)

// chatRequest is the part of an OpenAI chat-completions request that
// scoring reads.
type chatRequest struct {
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// ScoreRequest scores one upstream chat-completions request body: how many
// of the evidence texts occur verbatim in its messages, and how many model
// tokens the messages' text holds (count is the server's tokenizer). Text is
// matched after JSON decoding, never against the escaped bytes. The live
// question closes the frame; it is counted in tokens but not searched, so a
// question quoting a turn does not find its own evidence.
func ScoreRequest(body []byte, question string, evidence []string, count func(string) int) (found, tokens int, err error) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return 0, 0, fmt.Errorf("upstream body is not a chat request: %w", err)
	}
	texts := make([]string, 0, len(req.Messages))
	for _, m := range req.Messages {
		t, err := contentText(m.Content)
		if err != nil {
			return 0, 0, err
		}
		tokens += count(t)
		texts = append(texts, t)
	}
	if n := len(texts); n > 0 && question != "" {
		if last := texts[n-1]; strings.HasSuffix(last, question) {
			texts[n-1] = strings.TrimSuffix(last, question)
		}
	}
	frame := strings.Join(texts, "\n\n")
	for _, ev := range evidence {
		if ev != "" && strings.Contains(frame, ev) {
			found++
		}
	}
	return found, tokens, nil
}

// contentText is a message's text: a string, or the text parts of an array.
func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("message content is neither text nor parts: %w", err)
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}
