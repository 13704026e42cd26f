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

// publicURL is the proxy's root, where the key travels in the
// X-Perpetuity-Key header instead of the path.
func (c Connect) publicURL() string { return strings.TrimSuffix(c.AnthropicBase, "/k/{key}") }

// HeaderKey is the value shown for X-Perpetuity-Key.
func (c Connect) HeaderKey() string { return withKey("{key}", c.Key) }

// OpenAIHeaderURL is the OpenAI-dialect base URL when the key is sent in
// the X-Perpetuity-Key header.
func (c Connect) OpenAIHeaderURL() string { return c.publicURL() + "/v1" }

// AnthropicHeaderURL is the Anthropic-dialect base URL when the key is
// sent in the header (the Anthropic SDKs add /v1 themselves).
func (c Connect) AnthropicHeaderURL() string { return c.publicURL() }

// Snippets are the connection examples for one key. The SDKs can add a
// header, so they send the key in X-Perpetuity-Key rather than in the URL,
// where proxies and logs along the way see it; agents configured by a
// base URL alone keep the key in the path. The provider key stays the
// caller's own: Perpetuity forwards it upstream and never stores it. The
// model names are the README quick starts'.
func (c Connect) Snippets() []Snippet {
	oa := withKey(c.OpenAIBase, c.Key)
	pub, key := c.publicURL(), c.HeaderKey()
	return []Snippet{
		{ID: "openai", Title: "OpenAI SDK (Python)", Lang: "python", Code: `import os
from openai import OpenAI

client = OpenAI(
    base_url="` + pub + `/v1",
    api_key=os.environ["OPENAI_API_KEY"],  # your OpenAI key, forwarded as is
    default_headers={"X-Perpetuity-Key": "` + key + `"},
)
reply = client.chat.completions.create(
    model="gpt-4o-mini",
    messages=[{"role": "user", "content": "What did we decide about the release?"}],
)
print(reply.choices[0].message.content)
`},
		{ID: "openai-node", Title: "OpenAI SDK (Node, TypeScript)", Lang: "js", Code: `import OpenAI from "openai"; // npm install openai

const client = new OpenAI({
  baseURL: "` + pub + `/v1",
  apiKey: process.env.OPENAI_API_KEY, // your OpenAI key, forwarded as is
  defaultHeaders: { "X-Perpetuity-Key": "` + key + `" },
});
const reply = await client.chat.completions.create({
  model: "gpt-4o-mini",
  messages: [{ role: "user", content: "What did we decide about the release?" }],
});
console.log(reply.choices[0].message.content);
`},
		{ID: "anthropic", Title: "Anthropic SDK (Python)", Lang: "python", Code: `import os
import anthropic

client = anthropic.Anthropic(
    base_url="` + pub + `",
    api_key=os.environ["ANTHROPIC_API_KEY"],  # your Anthropic key, forwarded as is
    default_headers={"X-Perpetuity-Key": "` + key + `"},
)
reply = client.messages.create(
    model="claude-sonnet-4-5",
    max_tokens=1024,
    messages=[{"role": "user", "content": "What did we decide about the release?"}],
)
print(reply.content[0].text)
`},
		{ID: "anthropic-node", Title: "Anthropic SDK (Node, TypeScript)", Lang: "js", Code: `import Anthropic from "@anthropic-ai/sdk"; // npm install @anthropic-ai/sdk

const client = new Anthropic({
  baseURL: "` + pub + `",
  apiKey: process.env.ANTHROPIC_API_KEY, // your Anthropic key, forwarded as is
  defaultHeaders: { "X-Perpetuity-Key": "` + key + `" },
});
const reply = await client.messages.create({
  model: "claude-sonnet-4-5",
  max_tokens: 1024,
  messages: [{ role: "user", content: "What did we decide about the release?" }],
});
console.log(reply.content[0].text);
`},
		{ID: "agent", Title: "Coding agent (environment)", Lang: "sh", Code: `# Agents that speak the Anthropic API and take extra headers (e.g. Claude Code):
export ANTHROPIC_BASE_URL="` + pub + `"
export ANTHROPIC_CUSTOM_HEADERS="X-Perpetuity-Key: ` + key + `"
# Agents configured by a base URL alone (e.g. Codex CLI): the key goes in the path.
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
