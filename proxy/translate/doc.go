// Package translate converts between the OpenAI chat-completions dialect and
// the Anthropic messages dialect, in both directions: request bodies,
// non-streaming responses, error bodies, and SSE streams one event at a time.
//
// What has no counterpart on the other side is dropped with a debug log line,
// never an error; an error means the input itself is malformed. The choices
// the two dialects leave open, made here once:
//
//   - System prompt. Every system and developer message, wherever it stands,
//     becomes one text block of Anthropic's top-level system (cache_control
//     on text parts is kept). Anthropic system blocks become one OpenAI
//     system message, joined by a blank line; cache_control is dropped.
//   - Alternation. Anthropic wants user/assistant strictly alternating and
//     the first message from the user: anthropic.NormalizeMessages merges
//     consecutive same-role messages (tool results count as user), moves
//     tool_result blocks to the front of their user message, drops empty
//     messages, and puts a user message containing anthropic.PadText in
//     front of a conversation that starts with the assistant.
//   - Assistant text. Multiple text blocks of one assistant message are
//     concatenated without a separator (the API splits one answer into
//     several blocks around citations).
//   - Tool ids are kept; characters Anthropic rejects (outside
//     [A-Za-z0-9_-]) become '_', the same way in every direction, so a call
//     and its result still match.
//   - max_tokens. Anthropic requires it: max_completion_tokens, else
//     max_tokens, else DefaultMaxTokens(model). Toward OpenAI, reasoning
//     models (o1..., gpt-5...) get max_completion_tokens (they reject
//     max_tokens) and lose temperature/top_p (they reject them); all other
//     models get max_tokens, which every OpenAI-compatible server knows.
//   - temperature is clamped to Anthropic's 0..1. When both temperature and
//     top_p are set, top_p is dropped (newer Claude models reject both).
//   - Streaming toward OpenAI always sets stream_options.include_usage so
//     usage can be reported; the translated stream emits the usage chunk
//     only if the client asked for it (StreamOptions.IncludeUsage).
//   - Tool results. OpenAI tool messages hold text only: images in an
//     Anthropic tool_result go into the user message after the tool
//     messages; is_error has no counterpart and is dropped. Invalid tool
//     call arguments become {} toward Anthropic, which requires an object.
//   - Stop reasons: end_turn/stop_sequence/pause_turn -> stop, max_tokens ->
//     length, tool_use -> tool_calls, refusal -> content_filter; back again,
//     stop -> end_turn (tool_use when tool calls came with it, as Ollama
//     says "stop" there). Usage: OpenAI prompt_tokens = Anthropic input +
//     cache read + cache creation; cached_tokens <-> cache_read_input_tokens.
//   - Response model and ids: the model is the one the client asked for;
//     response ids (chatcmpl-..., msg_...) come from IDs, tool ids are kept.
//   - Thinking/reasoning is dropped in both directions: a thinking block
//     without Anthropic's signature cannot be sent back, and OpenAI has no
//     field for it.
//
// Streams emit events with Event, Data and Raw set; Raw is the exact wire
// form ("event: NAME\ndata: {...}\n\n" for Anthropic, "data: {...}\n\n" for
// OpenAI), byte-exact with the real APIs' key order.
package translate
