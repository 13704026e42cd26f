// Package fakeprovider is an in-process stand-in for the OpenAI and
// Anthropic HTTP APIs, for tests, end-to-end runs and `perpetuity-bench
// eval`/`bench`; never for the server binary, whose dependency list
// cmd/perpetuity's tests check. Mount a Provider at the root of an
// httptest.Server; the OpenAI base URL is server.URL+"/v1" and the
// Anthropic base URL is server.URL.
//
// It speaks the wire formats as the real services sent them in late 2025:
// field order, pretty-printed OpenAI bodies and compact Anthropic ones, SSE
// event names, `data: [DONE]`, Anthropic's `ping` after the first
// content_block_start, id shapes (chatcmpl-, call_, msg_, toolu_, resp_,
// fc_), system_fingerprint, service_tier, usage objects,
// stream_options.include_usage and include_obfuscation, error bodies and
// auth failures. The official SDKs parse everything it sends; the tests prove
// it.
//
// Output is deterministic: ids come from a seeded generator that Reset
// rewinds, and timestamps are fixed (WithCreated), so golden files of the
// exact bytes stay stable.
//
// What it replies is scripted per request (Script, SetDefault, Reply): text,
// tool calls, pacing, HTTP errors, a connection cut mid-stream, an in-band
// error event, or a stream that ends without its stop events. What it
// received is recorded (Requests), including whether and when the client
// went away before the reply finished (Canceled, WaitClosed), which is how
// the proxy's upstream cancellation is measured.
package fakeprovider
