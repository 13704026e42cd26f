package translate

import (
	"github.com/perpetuity/perpetuity/proxy/wire/anthropic"
	"github.com/perpetuity/perpetuity/proxy/wire/openai"
)

// finishReason maps an Anthropic stop reason to OpenAI's finish_reason.
func finishReason(stop string) string {
	switch stop {
	case anthropic.StopMaxTokens, anthropic.StopContextWindowExceeded:
		return openai.FinishLength
	case anthropic.StopToolUse:
		return openai.FinishToolCalls
	case anthropic.StopRefusal:
		return openai.FinishContentFilter
	}
	// end_turn, stop_sequence, pause_turn and anything new: the turn ended.
	return openai.FinishStop
}

// stopReason maps OpenAI's finish_reason to an Anthropic stop reason.
// OpenAI does not say whether a stop sequence matched, so "stop" is always
// end_turn.
func stopReason(finish string) string {
	switch finish {
	case openai.FinishLength:
		return anthropic.StopMaxTokens
	case openai.FinishToolCalls, openai.FinishFunctionCall:
		return anthropic.StopToolUse
	case openai.FinishContentFilter:
		return anthropic.StopRefusal
	}
	return anthropic.StopEndTurn
}

// chatUsage maps Anthropic usage to OpenAI's, whose prompt_tokens counts
// cached tokens too (read or written).
func chatUsage(u anthropic.Usage) *openai.Usage {
	prompt := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	return &openai.Usage{
		PromptTokens:            prompt,
		CompletionTokens:        u.OutputTokens,
		TotalTokens:             prompt + u.OutputTokens,
		PromptTokensDetails:     &openai.PromptTokensDetails{CachedTokens: u.CacheReadInputTokens},
		CompletionTokensDetails: &openai.CompletionTokensDetails{},
	}
}

// messagesUsage maps OpenAI usage to Anthropic's, whose input_tokens
// excludes cache reads.
func messagesUsage(u openai.Usage) anthropic.Usage {
	cached := min(max(u.CachedTokens(), 0), u.PromptTokens)
	return anthropic.Usage{
		InputTokens:          u.PromptTokens - cached,
		CacheReadInputTokens: cached,
		OutputTokens:         u.CompletionTokens,
	}
}
