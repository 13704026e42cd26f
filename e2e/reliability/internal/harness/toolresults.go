package harness

import (
	"encoding/json"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
)

// ToolResults reads the tool results a provider request carries at its
// end, in either dialect: what the proxy's memory tools answered the model.
func ToolResults(r fakeprovider.Recorded) []string {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(r.Body, &req) != nil || len(req.Messages) == 0 {
		return nil
	}
	var out []string
	if r.Dialect == fakeprovider.DialectAnthropic {
		var blocks []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(req.Messages[len(req.Messages)-1].Content, &blocks)
		for _, b := range blocks {
			if b.Type == "tool_result" {
				out = append(out, string(b.Content))
			}
		}
		return out
	}
	for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role == "tool"; i-- {
		out = append(out, string(req.Messages[i].Content))
	}
	return out
}
