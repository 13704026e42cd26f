package locomo

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Tool reach: for evidence the frame left out, how much one memory tool
// brings back. A probe's first upstream request is the frame; the second
// carries the tool results as OpenAI "tool" messages.

// ToolScored is one question probed with one memory tool.
type ToolScored struct {
	Tool     string
	Category int
	Missed   int // evidence turns not in the frame
	Reached  int // of them, in the tool results
}

// Reach is one tool's figure over the counted categories (1-4).
type Reach struct {
	Missed  int     `json:"missed"`
	Reached int     `json:"reached"`
	Share   float64 `json:"share"` // Reached / Missed, 0 when nothing was missed
}

// labelID is a turn id in a frame label, as the proxy renders it with the
// tools on: 【speaker #123】.
var labelID = regexp.MustCompile(`#([0-9]+)】`)

// Missing returns the evidence texts that are not in the request's frame,
// matched as ScoreRequest matches them.
func Missing(body []byte, question string, evidence []string) ([]string, error) {
	texts, err := requestTexts(body, "")
	if err != nil {
		return nil, err
	}
	frame := strings.Join(withoutQuestion(texts, question), "\n\n")
	var out []string
	for _, ev := range evidence {
		if ev != "" && !strings.Contains(frame, ev) {
			out = append(out, ev)
		}
	}
	return out, nil
}

// FrameIDs returns the turn ids the request's labels carry, once each, in
// order of appearance.
func FrameIDs(body []byte) ([]int64, error) {
	texts, err := requestTexts(body, "")
	if err != nil {
		return nil, err
	}
	seen := map[int64]bool{}
	var ids []int64
	for _, t := range texts {
		for _, m := range labelID.FindAllStringSubmatch(t, -1) {
			id, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil || seen[id] {
				continue
			}
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// ToolResults returns the text of the request's tool-result messages, and
// whether it has any (a request without them is a first round).
func ToolResults(body []byte) (string, bool, error) {
	texts, err := requestTexts(body, "tool")
	if err != nil {
		return "", false, err
	}
	return strings.Join(texts, "\n\n"), len(texts) > 0, nil
}

// CountReached counts the missed evidence texts that occur in results.
func CountReached(results string, missed []string) int {
	n := 0
	for _, ev := range missed {
		if strings.Contains(results, ev) {
			n++
		}
	}
	return n
}

// requestTexts decodes the text of a chat request's messages, only those
// of role when it is not empty.
func requestTexts(body []byte, role string) ([]string, error) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("upstream body is not a chat request: %w", err)
	}
	var out []string
	for _, m := range req.Messages {
		if role != "" && m.Role != role {
			continue
		}
		t, err := contentText(m.Content)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// withoutQuestion drops the live question closing the frame, so a question
// quoting a turn does not find its own evidence.
func withoutQuestion(texts []string, question string) []string {
	if n := len(texts); n > 0 && question != "" && strings.HasSuffix(texts[n-1], question) {
		texts = append(texts[:n-1:n-1], strings.TrimSuffix(texts[n-1], question))
	}
	return texts
}

// SummarizeTools sums each tool's probes over categories 1-4.
func SummarizeTools(all []ToolScored) map[string]Reach {
	out := map[string]Reach{}
	for _, s := range all {
		if !counted(s.Category) {
			continue
		}
		r := out[s.Tool]
		r.Missed += s.Missed
		r.Reached += min(s.Reached, s.Missed)
		out[s.Tool] = r
	}
	for k, r := range out {
		if r.Missed > 0 {
			r.Share = round(float64(r.Reached)/float64(r.Missed), 4)
		}
		out[k] = r
	}
	return out
}

// WriteToolTable prints the tool reach figures, tools in the given order.
func WriteToolTable(w io.Writer, all []ToolScored, tools []string, budget int) {
	sum := SummarizeTools(all)
	fmt.Fprintf(w, "\nmemory tools at @%d, categories 1-4: evidence turns the frame missed, and how many one call round of each tool returns\n", budget)
	fmt.Fprintf(w, "%-14s %8s %8s %7s\n", "tool", "missed", "reached", "share")
	for _, t := range tools {
		r := sum[t]
		fmt.Fprintf(w, "%-14s %8d %8d %7.3f\n", t, r.Missed, r.Reached, r.Share)
	}
}
