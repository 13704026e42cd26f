package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/perpetuity/perpetuity/proxy/dialect"
)

// PostgreSQL text holds neither U+0000 nor invalid UTF-8. A request that
// carried either where Perpetuity stores or names text used to be answered
// "memory is unavailable" (a 503; Anthropic's overloaded_error, which SDKs
// retry), and a NUL in a conversation's first message broke it for good
// (issue 15, finding 9). checkStorable refuses such text before anything is
// written, with a 400 naming the field.
//
// Only what is stored or names a stored row is checked: the live question,
// the model (request records), the user and conversation headers, the API
// user field when it is the identity, and the Responses conversation id.
// Text that is never stored (earlier turns of a resent history, assistant
// turns, the system prompt, tool results, a user field that is only a hint)
// goes through as sent: a harness that keeps a refused question in its
// history must not be locked out of the conversation. A title drawn from
// such a turn is cleaned instead (storableTitle).
//
// encoding/json has already turned invalid UTF-8 inside JSON strings into
// U+FFFD, so the bytes as they arrived are checked, not the decoded text.

// checkStorable refuses the parts of in and h that cannot be stored.
// hintIsIdentity: the tenant takes the API user field as the memory user.
func checkStorable(in *inbound, h http.Header, hintIsIdentity bool) error {
	if err := storableHeaders(h); err != nil {
		return err
	}
	if err := storableJSON("model", in.fields["model"], in.model); err != nil {
		return err
	}
	if in.live >= 0 {
		field, raw := fmt.Sprintf("%s[%d].content", in.listKey, in.live), rawContent(in.messages[in.live].raw)
		if in.listKey == "input" && isJSONString(in.fields["input"]) {
			field, raw = "input", in.fields["input"]
		}
		if err := storableJSON(field, raw, in.messages[in.live].text); err != nil {
			return err
		}
	}
	if hintIsIdentity && strings.TrimSpace(h.Get(HeaderUser)) == "" && in.userHint != "" {
		field, raw := "user", in.fields["user"]
		if in.dialect == dialect.AnthropicMessages {
			field, raw = "metadata.user_id", in.fields["metadata"]
		}
		if err := storableJSON(field, raw, in.userHint); err != nil {
			return err
		}
	}
	if in.session != "" {
		if err := storableJSON("conversation", in.fields["conversation"], in.session); err != nil {
			return err
		}
	}
	return nil
}

// storableHeaders checks the headers that name a memory user or a
// conversation. net/http refuses a NUL in a header; bytes that are not
// UTF-8 pass it.
func storableHeaders(h http.Header) error {
	for _, name := range []string{HeaderUser, HeaderConversation} {
		for _, v := range h.Values(name) {
			if err := storableText(name, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// storableText refuses a NUL or invalid UTF-8 in text that arrived as is.
func storableText(field, s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return nulError(field)
	}
	if !utf8.ValidString(s) {
		return utf8Error(field)
	}
	return nil
}

// storableJSON refuses a field whose decoded text holds a NUL or whose raw
// bytes are not UTF-8.
func storableJSON(field string, raw json.RawMessage, decoded string) error {
	if strings.IndexByte(decoded, 0) >= 0 {
		return nulError(field)
	}
	if !utf8.Valid(raw) {
		return utf8Error(field)
	}
	return nil
}

func nulError(field string) *APIError {
	return errBadRequest("%s contains a NUL character (U+0000), which cannot be stored", field)
}

func utf8Error(field string) *APIError {
	return errBadRequest("%s is not valid UTF-8, which cannot be stored", field)
}

// rawContent is a message's content field as it arrived.
func rawContent(msg json.RawMessage) json.RawMessage {
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(msg, &m)
	return m.Content
}

func isJSONString(raw json.RawMessage) bool {
	t := strings.TrimSpace(string(raw))
	return len(t) > 0 && t[0] == '"'
}

// storableTitle is a conversation title PostgreSQL can hold: the first
// user message it is drawn from may be history nobody stores.
func storableTitle(s string) string { return strings.ReplaceAll(s, "\x00", "") }

// storableReply is a provider's reply as it can be stored: a NUL the model
// wrote becomes U+FFFD rather than losing the whole reply to the database.
func storableReply(s string) string { return strings.ReplaceAll(s, "\x00", "\uFFFD") }
