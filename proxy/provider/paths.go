package provider

import "strings"

// The endpoints each built-in provider serves on pass-through: the proxy
// relays a caller's path only when it names one of them (proxy/passpath.go
// checks the path itself).

// PathShape is one documented endpoint: its segments ("*" is one id) and
// the methods it takes.
type PathShape struct {
	Segs    []string
	Methods []string
}

// shapes builds a table from lines of "METHOD[,METHOD] path/with/*".
func shapes(lines ...string) []PathShape {
	out := make([]PathShape, 0, len(lines))
	for _, l := range lines {
		ms, p, _ := strings.Cut(l, " ")
		out = append(out, PathShape{Segs: strings.Split(p, "/"), Methods: strings.Split(ms, ",")})
	}
	return out
}

// openAIPaths are OpenAI's endpoints under /v1 that pass through (chat
// completions, responses and messages have routes of their own). Stored
// chat completions are the GETs and DELETEs of /chat/completions.
func openAIPaths() []PathShape {
	return shapes(
		"GET models", "GET,DELETE models/*",
		"POST embeddings", "POST moderations", "POST completions",
		"POST audio/speech", "POST audio/transcriptions", "POST audio/translations",
		"POST images/generations", "POST images/edits", "POST images/variations",
		"GET,POST files", "GET,DELETE files/*", "GET files/*/content",
		"POST uploads", "POST uploads/*/parts", "POST uploads/*/complete", "POST uploads/*/cancel",
		"GET,POST batches", "GET batches/*", "POST batches/*/cancel",
		"POST responses/input_tokens", "GET,DELETE responses/*", "POST responses/*/cancel", "GET responses/*/input_items",
		"GET chat/completions", "GET,POST,DELETE chat/completions/*", "GET chat/completions/*/messages",
		"POST conversations", "GET,POST,DELETE conversations/*", "GET,POST conversations/*/items", "GET,DELETE conversations/*/items/*",
		"GET,POST fine_tuning/jobs", "GET fine_tuning/jobs/*", "POST fine_tuning/jobs/*/cancel",
		"GET fine_tuning/jobs/*/events", "GET fine_tuning/jobs/*/checkpoints",
		"GET,POST vector_stores", "GET,POST,DELETE vector_stores/*", "POST vector_stores/*/search",
		"GET,POST vector_stores/*/files", "GET,POST,DELETE vector_stores/*/files/*", "GET vector_stores/*/files/*/content",
		"POST vector_stores/*/file_batches", "GET vector_stores/*/file_batches/*", "POST vector_stores/*/file_batches/*/cancel",
		"GET vector_stores/*/file_batches/*/files",
	)
}

// anthropicPaths are Anthropic's endpoints under /v1 that pass through.
func anthropicPaths() []PathShape {
	return shapes(
		"POST messages/count_tokens",
		"GET models", "GET models/*",
		"GET,POST messages/batches", "GET,DELETE messages/batches/*", "POST messages/batches/*/cancel", "GET messages/batches/*/results",
		"GET,POST files", "GET,DELETE files/*", "GET files/*/content",
	)
}

// openRouterPaths are OpenRouter's endpoints under /api/v1 that pass
// through.
func openRouterPaths() []PathShape {
	return shapes(
		"GET models", "GET models/user", "GET models/*/*/endpoints",
		"POST completions", "POST embeddings",
		"GET generation", "GET credits", "GET key", "GET providers",
	)
}
