package injection

import (
	"encoding/json"
	"fmt"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
)

// part is one piece of text a provider request carries, with where it
// sits: a system position (OpenAI system/developer message, Anthropic
// system, Responses instructions) or a message of a role.
type part struct {
	system bool
	role   string // user, assistant, tool (tool results), or the system role's name
	text   string
}

// parts takes a provider request apart in its dialect.
func parts(r fakeprovider.Recorded) ([]part, error) {
	switch r.Dialect {
	case fakeprovider.DialectOpenAIChat:
		return chatParts(r.Body)
	case fakeprovider.DialectAnthropic:
		return anthropicParts(r.Body)
	case fakeprovider.DialectOpenAIResponses:
		return responsesParts(r.Body)
	}
	return nil, fmt.Errorf("request to %s is not a generation request", r.Path)
}

func chatParts(body []byte) ([]part, error) {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	var out []part
	for _, m := range req.Messages {
		sys := m.Role == "system" || m.Role == "developer"
		for _, t := range texts(m.Content) {
			out = append(out, part{system: sys, role: m.Role, text: t})
		}
	}
	return out, nil
}

func anthropicParts(body []byte) ([]part, error) {
	var req struct {
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	var out []part
	for _, t := range texts(req.System) {
		out = append(out, part{system: true, role: "system", text: t})
	}
	for _, m := range req.Messages {
		var blocks []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(m.Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type == "tool_result" {
					for _, t := range texts(b.Content) {
						out = append(out, part{role: "tool", text: t})
					}
				}
			}
		}
		for _, t := range texts(m.Content) {
			out = append(out, part{system: m.Role == "system", role: m.Role, text: t})
		}
	}
	return out, nil
}

func responsesParts(body []byte) ([]part, error) {
	var req struct {
		Instructions json.RawMessage `json:"instructions"`
		Input        json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	var out []part
	for _, t := range texts(req.Instructions) {
		out = append(out, part{system: true, role: "instructions", text: t})
	}
	var s string
	if json.Unmarshal(req.Input, &s) == nil {
		return append(out, part{role: "user", text: s}), nil
	}
	var items []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		Output  json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(req.Input, &items); err != nil {
		return nil, err
	}
	for _, it := range items {
		if it.Type == "function_call_output" {
			for _, t := range texts(it.Output) {
				out = append(out, part{role: "tool", text: t})
			}
			continue
		}
		sys := it.Role == "system" || it.Role == "developer"
		for _, t := range texts(it.Content) {
			out = append(out, part{system: sys, role: it.Role, text: t})
		}
	}
	return out, nil
}

// texts reads a content value: a string, or an array of parts whose text
// (text, input_text, output_text) is taken; tool calls and images are not
// text the model reads as prose.
func texts(raw json.RawMessage) []string {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var ps []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &ps) != nil {
		return nil
	}
	var out []string
	for _, p := range ps {
		switch p.Type {
		case "text", "input_text", "output_text":
			out = append(out, p.Text)
		}
	}
	return out
}
