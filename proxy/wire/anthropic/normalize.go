package anthropic

import (
	"slices"
	"strings"
)

// PadText is the text of the user message NormalizeMessages puts in front of
// a conversation that starts with the assistant: the API requires the first
// message to be the user's and rejects empty text.
const PadText = "..."

// NormalizeMessages reshapes msgs into what the messages API accepts, for
// turns that come from elsewhere (another dialect, stored history):
//   - empty text blocks and messages left without content are dropped;
//   - consecutive messages of the same role are merged (strict alternation);
//   - a conversation starting with the assistant gets a user message with
//     PadText in front;
//   - tool_result blocks lead their user message, as the API requires;
//   - the final assistant message loses trailing whitespace (the API rejects
//     it in a prefill) and is dropped if nothing is left;
//   - a message that is a single uncached text block is written as a string.
//
// Roles other than user and assistant are dropped. msgs is not modified.
func NormalizeMessages(msgs []Message) []Message {
	out := []Message{}
	for _, m := range msgs {
		if m.Role != RoleUser && m.Role != RoleAssistant {
			continue
		}
		blocks := nonEmptyBlocks(m.Content)
		if len(blocks) == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == m.Role {
			out[n-1].Content.Blocks = append(out[n-1].Content.Blocks, blocks...)
			continue
		}
		out = append(out, Message{Role: m.Role, Content: Content{Blocks: blocks}, Extra: m.Extra})
	}
	if len(out) > 0 && out[0].Role == RoleAssistant {
		pad := Message{Role: RoleUser, Content: Content{Blocks: []ContentBlock{{Type: BlockText, Text: PadText}}}}
		out = append([]Message{pad}, out...)
	}
	for i := range out {
		blocks := out[i].Content.Blocks
		if out[i].Role == RoleUser {
			slices.SortStableFunc(blocks, func(a, b ContentBlock) int {
				return rank(b.Type == BlockToolResult) - rank(a.Type == BlockToolResult)
			})
		}
		if i == len(out)-1 && out[i].Role == RoleAssistant {
			for len(blocks) > 0 && blocks[len(blocks)-1].Type == BlockText {
				last := &blocks[len(blocks)-1]
				last.Text = strings.TrimRight(last.Text, " \t\r\n")
				if last.Text != "" {
					break
				}
				blocks = blocks[:len(blocks)-1]
			}
			if len(blocks) == 0 {
				out = out[:i]
				break
			}
		}
		out[i].Content.Blocks = blocks
		if len(blocks) == 1 && blocks[0].Type == BlockText && len(blocks[0].CacheControl) == 0 && len(blocks[0].Citations) == 0 && len(blocks[0].Extra) == 0 {
			out[i].Content = TextContent(blocks[0].Text)
		}
	}
	return out
}

// nonEmptyBlocks is c as a fresh slice of blocks, without empty text.
func nonEmptyBlocks(c Content) []ContentBlock {
	if c.String != nil {
		if *c.String == "" {
			return nil
		}
		return []ContentBlock{{Type: BlockText, Text: *c.String}}
	}
	var out []ContentBlock
	for _, b := range c.Blocks {
		if b.Type == BlockText && b.Text == "" {
			continue
		}
		out = append(out, b)
	}
	return out
}

func rank(b bool) int {
	if b {
		return 1
	}
	return 0
}
