package templates

import "strings"

// keyPlaceholder stands in for the key once it can no longer be shown.
const keyPlaceholder = "YOUR_PERPETUITY_KEY"

// Snippet is one copy-paste block on the connect page.
type Snippet struct {
	ID    string
	Title string
	Lang  string
	Code  string
}

// withKey fills a proxy URL template: the key when it was just created,
// otherwise a placeholder the user replaces with a key they kept.
func withKey(base, key string) string {
	if key == "" {
		key = keyPlaceholder
	}
	return strings.ReplaceAll(base, "{key}", key)
}

// Snippets are the connection examples for one key. The provider key stays
// the caller's own: Perpetuity forwards it upstream and never stores it.
func (c Connect) Snippets() []Snippet {
	oa := withKey(c.OpenAIBase, c.Key)
	an := withKey(c.AnthropicBase, c.Key)
	return []Snippet{
		{ID: "openai", Title: "OpenAI SDK (Python)", Lang: "python", Code: `import os
from openai import OpenAI

client = OpenAI(
    base_url="` + oa + `",
    api_key=os.environ["OPENAI_API_KEY"],  # your OpenAI key, forwarded as is
)
reply = client.chat.completions.create(
    model="gpt-4o-mini",
    messages=[{"role": "user", "content": "What did we decide about the release?"}],
)
print(reply.choices[0].message.content)
`},
		{ID: "anthropic", Title: "Anthropic SDK (Python)", Lang: "python", Code: `import os
import anthropic

client = anthropic.Anthropic(
    base_url="` + an + `",
    api_key=os.environ["ANTHROPIC_API_KEY"],  # your Anthropic key, forwarded as is
)
reply = client.messages.create(
    model="claude-sonnet-4-5",
    max_tokens=1024,
    messages=[{"role": "user", "content": "What did we decide about the release?"}],
)
print(reply.content[0].text)
`},
		{ID: "agent", Title: "Coding agent (environment)", Lang: "sh", Code: `# Agents that speak the Anthropic API (e.g. Claude Code):
export ANTHROPIC_BASE_URL="` + an + `"
# Agents that speak the OpenAI API (e.g. Codex CLI):
export OPENAI_BASE_URL="` + oa + `"
# Optional, with a tenant-wide key: whose memory this is, when one key serves several people.
#   header X-Perpetuity-User: alice
`},
	}
}

// OpenAIURL is the OpenAI-dialect base URL shown for this key.
func (c Connect) OpenAIURL() string { return withKey(c.OpenAIBase, c.Key) }

// AnthropicURL is the Anthropic-dialect base URL shown for this key.
func (c Connect) AnthropicURL() string { return withKey(c.AnthropicBase, c.Key) }
