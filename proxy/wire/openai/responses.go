package openai

import (
	"encoding/json"
	"strings"
)

// The Responses API (POST /v1/responses). The proxy relays it without
// translation, so these types cover only what it reads: the input items,
// the reply text and usage, and the stream's event types.

// Responses stream event types the proxy acts on.
const (
	EventOutputTextDelta    = "response.output_text.delta"
	EventResponseCompleted  = "response.completed"
	EventResponseIncomplete = "response.incomplete"
	EventResponseFailed     = "response.failed"
	EventError              = "error"
)

// Responses input item types and content part types.
const (
	ItemMessage            = "message"
	ItemFunctionCall       = "function_call"
	ItemFunctionCallOutput = "function_call_output"
	PartInputText          = "input_text"
	PartOutputText         = "output_text"
)

// ResponsesInputItem is one entry of a Responses request's input array. A
// message has Role and Content (a string or parts; Type "message" or
// absent); other items (function_call, function_call_output, reasoning,
// item_reference, ...) are told apart by Type.
type ResponsesInputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	CallID  string          `json:"call_id"`
}

// IsMessage reports whether the item is a message (role and content).
func (i ResponsesInputItem) IsMessage() bool { return i.Type == "" || i.Type == ItemMessage }

// IsToolOutput reports whether the item carries the result of a tool call
// back to the model (function_call_output, computer_call_output,
// custom_tool_call_output, mcp_approval_response, ...).
func (i ResponsesInputItem) IsToolOutput() bool {
	return strings.HasSuffix(i.Type, "_output") || strings.HasSuffix(i.Type, "_response")
}

// ResponsesResponse is the part of a response object the proxy reads.
type ResponsesResponse struct {
	ID     string                `json:"id"`
	Status string                `json:"status"`
	Output []ResponsesOutputItem `json:"output"`
	Usage  *ResponsesUsage       `json:"usage"`
}

// OutputText is the text of every output_text part of every message item,
// concatenated, as the SDKs' output_text helper computes it.
func (r ResponsesResponse) OutputText() string {
	var b strings.Builder
	for _, item := range r.Output {
		if item.Type != ItemMessage {
			continue
		}
		for _, p := range item.Content {
			if p.Type == PartOutputText {
				b.WriteString(p.Text)
			}
		}
	}
	return b.String()
}

// ResponsesOutputItem is one entry of a response's output.
type ResponsesOutputItem struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Role    string `json:"role"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ResponsesUsage is a response's token accounting.
type ResponsesUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// ResponsesStreamEvent is the part of a stream event the proxy reads.
type ResponsesStreamEvent struct {
	Type     string             `json:"type"`
	Delta    string             `json:"delta"`
	Response *ResponsesResponse `json:"response"`
}

// ResponsesErrorEvent is the data of the stream's in-band error event.
// Error repeats the error in the shape of an error body: the SDKs end a
// stream with an error when an event carries an "error" key, so a client
// cannot mistake the event for a normal one.
type ResponsesErrorEvent struct {
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
	Message string          `json:"message"`
	Param   json.RawMessage `json:"param"`
	Error   ErrorDetail     `json:"error"`
}

// NewResponsesErrorEvent builds an in-band error event from an error body.
func NewResponsesErrorEvent(b ErrorBody) ResponsesErrorEvent {
	code := b.Error.Code
	if len(code) == 0 {
		code = json.RawMessage("null")
	}
	return ResponsesErrorEvent{Type: EventError, Code: code, Message: b.Error.Message, Param: json.RawMessage("null"), Error: b.Error}
}

// ConversationID reads the Responses request's conversation parameter, a
// string id or an object with an id; "" when absent or malformed.
func ConversationID(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return o.ID
	}
	return ""
}
