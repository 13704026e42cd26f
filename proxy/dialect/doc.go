// Package dialect names the three API shapes the proxy speaks: OpenAI chat
// completions, Anthropic messages and the OpenAI Responses API. It is its
// own package so that the pipeline (proxy) and the parts it delegates to
// (the memory-tool loop, rate-limit headers, provider detection) can all
// name a dialect without importing one another.
package dialect
