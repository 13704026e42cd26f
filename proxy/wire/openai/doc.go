// Package openai holds Go types for the OpenAI chat-completions wire format:
// the request (with its string-or-parts unions), the response, the stream
// chunk and the error body; and the few Responses API types the proxy reads
// (input items, reply text, usage, stream event types), since it relays that
// API untranslated.
//
// Request types keep every key they do not model in an Extra map and write it
// back on encoding, so a request can be decoded, edited (the memory frame
// replaces the history) and re-encoded without losing provider-specific
// parameters. Response and chunk types encode with the key order the real API
// uses, so translated output is indistinguishable from the real thing.
package openai
