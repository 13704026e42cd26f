// Package wire is the root of the typed wire formats the proxy reads and
// writes: openai (chat completions) and anthropic (messages), plus jsonx, the
// small JSON toolkit both use to keep unknown fields and to emit objects in
// the exact key order the real APIs use.
package wire
