package toolloop

import (
	"encoding/json"
	"fmt"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/dialect"
	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
)

// protocol is what the loop does differently in each provider dialect.
type protocol interface {
	// definition wraps a memory tool in the dialect's tool shape.
	definition(s memory.ToolSpec) json.RawMessage
	// instruct puts the tools' instruction after the system prompt.
	instruct(o *jsonx.Object)
	// results are the messages answering a round's calls, after its
	// assistant message.
	results(calls []call, results []string) []json.RawMessage
	// noneChoice is the tool_choice that makes the model answer.
	noneChoice() json.RawMessage
	// read reads a non-streamed reply.
	read(body []byte) (Round, error)
	// merge makes one reply of the rounds' non-streamed replies.
	merge(bodies [][]byte) ([]byte, error)
	// stitcher makes one stream of the rounds' streams.
	stitcher(l *Loop) Stitcher
}

// protocolFor picks the dialect's loop. The Responses API has none: it
// never gets the memory tools.
func protocolFor(d dialect.Dialect) (protocol, error) {
	switch d {
	case dialect.OpenAIChat:
		return chatLoop{}, nil
	case dialect.AnthropicMessages:
		return messagesLoop{}, nil
	}
	return nil, fmt.Errorf("tools: no memory-tool loop for %s", d)
}
