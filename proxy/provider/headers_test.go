package provider

import (
	"net/http"
	"reflect"
	"testing"
)

// TestUpstreamHeaders: each provider gets only the credential it reads, in
// its header, and none of the other dialect's headers.
func TestUpstreamHeaders(t *testing.T) {
	t.Parallel()
	ps := testProviders()
	cases := []struct {
		name  string
		model string
		in    http.Header
		want  http.Header
	}{
		{"openai client to anthropic: bearer becomes x-api-key, version added, openai headers dropped", "claude-sonnet-4-5",
			hdr("Authorization", "Bearer sk-ant-api03-k", "Openai-Organization", "org", "Openai-Beta", "x", "X-Stainless-Lang", "go",
				"X-Perpetuity-Recall", "off", "Content-Length", "12", "Accept", "application/json"),
			hdr("X-Api-Key", "sk-ant-api03-k", "Anthropic-Version", "2023-06-01", "X-Stainless-Lang", "go", "Content-Type", "application/json", "Accept", "application/json")},
		{"anthropic client: version and beta kept", "claude-sonnet-4-5",
			hdr("X-Api-Key", "sk-ant-k", "Anthropic-Version", "2024-01-01", "Anthropic-Beta", "tools-2024"),
			hdr("X-Api-Key", "sk-ant-k", "Anthropic-Version", "2024-01-01", "Anthropic-Beta", "tools-2024", "Content-Type", "application/json")},
		{"oauth token stays a bearer", "claude-sonnet-4-5",
			hdr("Authorization", "Bearer sk-ant-oat01-k"),
			hdr("Authorization", "Bearer sk-ant-oat01-k", "Anthropic-Version", "2023-06-01", "Content-Type", "application/json")},
		{"both keys to anthropic: the bearer is not forwarded", "claude-sonnet-4-5",
			hdr("Authorization", "Bearer sk-test", "X-Api-Key", "sk-ant-k", "Anthropic-Version", "2023-06-01"),
			hdr("X-Api-Key", "sk-ant-k", "Anthropic-Version", "2023-06-01", "Content-Type", "application/json")},
		{"anthropic client to openai: x-api-key becomes bearer, anthropic headers dropped", "gpt-4o",
			hdr("X-Api-Key", "sk-proj-k", "Anthropic-Version", "2023-06-01", "Anthropic-Beta", "x", "Anthropic-Dangerous-Direct-Browser-Access", "true"),
			hdr("Authorization", "Bearer sk-proj-k", "Content-Type", "application/json")},
		{"both keys to openai: x-api-key is not forwarded", "gpt-4o",
			hdr("Authorization", "Bearer sk-test", "X-Api-Key", "sk-ant-k", "Openai-Project", "p"),
			hdr("Authorization", "Bearer sk-test", "Openai-Project", "p", "Content-Type", "application/json")},
		{"no credential", "llama-3",
			hdr("Accept", "text/event-stream"),
			hdr("Accept", "text/event-stream", "Content-Type", "application/json")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tg, err := ps.Detect(c.model, c.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := UpstreamHeaders(c.in, tg); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v\nwant %v", got, c.want)
			}
		})
	}
}
