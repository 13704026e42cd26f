// Package anthropic holds Go types for the Anthropic messages wire format:
// the request (system and content as string or blocks), the response, every
// stream event and the error body.
//
// Request types keep every key they do not model in an Extra map and write it
// back on encoding, so a request can be decoded, edited and re-encoded
// without losing a parameter or a block type this package does not know.
// Blocks and events encode with the key order the real API uses.
package anthropic
