// Package text turns message text into what memory stores and counts: model
// tokens (a BPE Counter embedded in the binary), stored tokens (Normalize,
// the sequence retrieval rows are derived from through a dictionary), chunks
// of long messages (Chunk, verbatim), and the part of a harness message that
// is the turn's content (Content, without the harness's scaffolding).
package text
