package proxy

import (
	"net/http"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/dialect"
	"github.com/perpetuity/perpetuity/proxy/provider"
	"github.com/perpetuity/perpetuity/proxy/translate"
	"github.com/perpetuity/perpetuity/proxy/wire/anthropic"
	"github.com/perpetuity/perpetuity/proxy/wire/openai"
)

// upstream is one (inbound dialect, provider) adapter: where the request
// goes, in which dialect, and how the reply comes back. The nil hooks mean
// "as it is": a same-dialect relay passes bytes through.
type upstream struct {
	provider string
	url      string
	dialect  dialect.Dialect // what the provider speaks on this call
	noTools  bool            // the operator declared the upstream notools
	header   http.Header
	// build renders the request body for the provider, frame included.
	build func(in *inbound, f *memory.Frame) ([]byte, error)
	// response turns a non-streamed provider reply into the client's dialect.
	response func(body []byte) ([]byte, error)
	// stream turns the provider's events into the client's dialect.
	stream func() translate.Stream
	// errorBody turns a provider error body into the client's dialect.
	errorBody func(status int, body []byte) (int, []byte)
}

func (u upstream) requestBody(in *inbound, f *memory.Frame) ([]byte, error) { return u.build(in, f) }

// route picks the adapter for a request: detection names the provider
// (proxy/provider), then one case per (inbound dialect, provider dialect) pair.
// Upstream base URLs come from the operator's configuration only; nothing
// in the request can name another host.
func (p *Proxy) route(in *inbound, h http.Header, tr *translate.Translator) (upstream, error) {
	tg, err := p.providers.Detect(in.model, h)
	if err != nil {
		return upstream{}, refused(err)
	}
	up := upstream{provider: tg.Provider.Name, dialect: tg.Provider.Dialect, noTools: tg.Provider.NoTools, header: provider.UpstreamHeaders(h, tg), build: renderFrame}
	switch {
	case in.dialect == dialect.OpenAIChat && tg.Provider.Dialect == dialect.OpenAIChat:
		up.url = tg.Provider.Base + "/chat/completions"

	case in.dialect == dialect.AnthropicMessages && tg.Provider.Dialect == dialect.AnthropicMessages:
		up.url = tg.Provider.Base + "/v1/messages"

	case in.dialect == dialect.OpenAIChat && tg.Provider.Dialect == dialect.AnthropicMessages:
		// Refuse what cannot be translated now, before anything is stored.
		if _, err := openai.ParseChatRequest(in.body); err != nil {
			return upstream{}, errBadRequest("request cannot be translated for Anthropic: %s", err.Error())
		}
		up.url = tg.Provider.Base + "/v1/messages"
		up.build = func(in *inbound, f *memory.Frame) ([]byte, error) {
			body, err := renderFrame(in, f)
			if err != nil {
				return nil, err
			}
			out, err := tr.ChatRequestToMessages(body)
			if err != nil {
				return nil, errBadRequest("request cannot be translated for Anthropic: %s", err.Error())
			}
			return out, nil
		}
		up.response = func(body []byte) ([]byte, error) { return tr.MessagesResponseToChat(body, in.model) }
		up.stream = func() translate.Stream {
			return tr.NewMessagesToChatStream(translate.StreamOptions{Model: in.model, IncludeUsage: in.includeUsage})
		}
		up.errorBody = translate.ErrorToChat

	case in.dialect == dialect.AnthropicMessages && tg.Provider.Dialect == dialect.OpenAIChat:
		if _, err := anthropic.ParseMessagesRequest(in.body); err != nil {
			return upstream{}, errBadRequest("request cannot be translated for %s: %s", provider.Title(tg.Provider.Name), err.Error())
		}
		up.url = tg.Provider.Base + "/chat/completions"
		up.build = func(in *inbound, f *memory.Frame) ([]byte, error) {
			body, err := renderFrame(in, f)
			if err != nil {
				return nil, err
			}
			out, err := tr.MessagesRequestToChat(body)
			if err != nil {
				return nil, errBadRequest("request cannot be translated for %s: %s", provider.Title(tg.Provider.Name), err.Error())
			}
			return out, nil
		}
		up.response = func(body []byte) ([]byte, error) { return tr.ChatResponseToMessages(body, in.model) }
		up.stream = func() translate.Stream { return tr.NewChatToMessagesStream(translate.StreamOptions{Model: in.model}) }
		up.errorBody = translate.ErrorToMessages

	case in.dialect == dialect.OpenAIResponses && tg.Provider.Dialect == dialect.OpenAIChat:
		up.url = tg.Provider.Base + "/responses"
		up.dialect = dialect.OpenAIResponses

	case in.dialect == dialect.OpenAIResponses && tg.Provider.Dialect == dialect.AnthropicMessages:
		return upstream{}, errBadRequest("model %q is served by Anthropic, and the Responses API is relayed to OpenAI-compatible "+
			"providers only; use /v1/chat/completions or /v1/messages, which translate", in.model)

	default:
		return upstream{}, errBadRequest("no upstream for dialect %s and provider %s", in.dialect, tg.Provider.Name)
	}
	return up, nil
}
