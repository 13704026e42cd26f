package dialect

// Dialect is an API shape: the one a request came in with, or the one a
// provider speaks.
type Dialect int

const (
	OpenAIChat Dialect = iota + 1
	AnthropicMessages
	OpenAIResponses
)

func (d Dialect) String() string {
	switch d {
	case OpenAIChat:
		return "openai-chat"
	case AnthropicMessages:
		return "anthropic-messages"
	case OpenAIResponses:
		return "openai-responses"
	}
	return "unknown"
}
