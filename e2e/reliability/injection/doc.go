// Package injection measures stored prompt injection (issue 9, item 11):
// turns whose text carries instructions ("ignore previous instructions"),
// fake system prompts, chat-template tokens, a JSON break-out and copies of
// the frame's own 【】 labels are stored through both dialects and through
// import (with forged speaker and user names too), then recalled through
// every inbound dialect and crossing, streaming and not, with memory tool
// results. Every request the fake provider receives is taken apart: the
// injected text may appear only as a quoted past turn (after a genuine
// speaker label, inside a user, assistant or tool message), never in a
// system position, and no forged label survives. The test is in
// injection_test.go.
package injection
