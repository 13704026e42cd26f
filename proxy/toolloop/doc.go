// Package toolloop runs the memory tools inside a reply (DESIGN §7). It is
// its own package because it is a protocol of its own inside the request
// pipeline: the pipeline hands it the provider's request and, round by
// round, the provider's replies, and gets back the next round's request and
// the one reply (or stream) the harness sees. Everything in between
// (tool definitions, calls taken out of replies, continuation requests,
// stitched streams, merged bodies) happens here, in the provider's dialect,
// one type per dialect chosen by the switch in protocolFor.
//
// The loop works on the request as the provider gets it: the tool
// definitions and their instruction go into that body, the model's memory
// calls are taken out of its reply, run, and sent back natively (the
// assistant's call message, then the results) after the frame and the
// harness's in-flight exchange, so ids match. A crossing adapter's
// translator sees one continuous reply, as the harness does.
//
// Behaviour:
//   - Rounds: at most Options.Rounds provider calls per request. On the
//     last one the model must answer: when the harness has tools of its own
//     the memory tools are withdrawn from the list (its tools and
//     tool_choice stay as sent); otherwise tool_choice is set to none and
//     the definitions stay, because earlier rounds' tool blocks are in the
//     history. A memory call made anyway on the last round is dropped.
//   - A round that calls only memory tools is continued. Its text was
//     already forwarded; the next round's text follows after a blank line.
//   - A round that mixes memory and harness calls: the memory calls run, the
//     harness calls are answered "not run yet" in the continuation, and the
//     model, now with what memory said, makes them again (or not, if what
//     memory said changed its mind); they then reach the harness. No call
//     vanishes unanswered, and the harness never gets a call the model made
//     before reading the memory it asked for.
//   - A round that calls only harness tools goes to the harness untouched.
//     Streamed, a round's events from its first harness call on are held
//     until the round ends (only then is it known whether memory was
//     called too); text before that goes out as it comes.
//   - A round cut short (max tokens, content filter, ...) is never
//     continued: its memory calls are dropped.
//   - Which turns get the tools is the pipeline's decision (proxy.toolsFor):
//     the Responses API never does (it is relayed untranslated, and its
//     stream has no single-message shape to stitch rounds into), so there
//     is no loop for it here.
package toolloop
