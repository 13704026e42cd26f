// Package provider knows the providers: where each lives (the operator's
// configuration, PERPETUITY_UPSTREAMS included), which one a request is for,
// with which of the caller's credentials, which of the caller's headers it
// gets, and which of its response headers and bodies reach the caller. It is
// its own package because it is a policy of its own with a narrow seam: the
// proxy asks for a Target (Detect, PassthroughTarget) and its headers
// (UpstreamHeaders, Outbound), filters what comes back
// (CopyResponseHeaders, ServedContentType), and turns an Error into the
// client's 400 or 401.
//
// Provider detection (DESIGN §3). Which provider a request is for is read
// from the credential's shape and the model name's shape; where each
// provider lives comes from the operator's configuration only. Nothing in a
// request (api_base or base_url fields, a URL as the model name, odd
// headers) can name a host.
//
// The rules, first match wins:
//
//  1. A model name that looks like a URL is refused.
//  2. A model matching a declared upstream's prefix (PERPETUITY_UPSTREAMS,
//     longest prefix) goes there, with whatever credential came.
//  3. An OpenRouter key (sk-or-) goes to OpenRouter, whatever the model:
//     the key is good nowhere else.
//  4. claude-* goes to Anthropic.
//  5. gpt-*, chatgpt-*, o<digit>*, codex-*, ft:* go to OpenAI.
//  6. vendor/model goes to OpenRouter.
//  7. Any other model goes where an unmistakable key points (sk-ant- to
//     Anthropic; sk-proj-, sk-svcacct-, sk-admin- to OpenAI). A bare sk- key
//     is not unmistakable: DeepSeek and many OpenAI-compatible servers issue
//     those too.
//  8. Anything else is a 400 naming the model and the credential's shape.
//
// A credential is never sent to a provider it visibly belongs to another
// of: a claude-* model with an OpenAI-looking key (Bearer sk-..., sk-proj-
// ...), a gpt-* model with an Anthropic key, a vendor/model name with an
// OpenAI or Anthropic key are 400s rather than forwarded. Keys of no known
// shape go wherever the model points (Anthropic OAuth tokens, local
// servers' keys). When both x-api-key and Authorization are sent, the one
// the chosen provider reads is used and the other is not forwarded:
// Anthropic reads x-api-key (else a Bearer token), OpenAI-compatible
// servers read the Bearer token (else x-api-key, moved to Authorization).
package provider
