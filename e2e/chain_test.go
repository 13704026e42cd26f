package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
)

// TestChainGraphThroughTheBinary: through the real service and the
// official SDK, a turn that continues one from another conversation is
// linked to it as a thread, and the reply that answered from a frame item
// is linked to it as evidence, by the server's own writer after the
// captures committed (issue 17).
func TestChainGraphThroughTheBinary(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := openai.NewClient(ooption.WithBaseURL(s.OpenAIBase()), ooption.WithAPIKey("sk-proj-e2e"), ooption.WithMaxRetries(0))
	ask := func(q, reply string) {
		t.Helper()
		s.Fake.Script(fakeprovider.Reply{Text: reply})
		if _, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(q)}}); err != nil {
			t.Fatal(err)
		}
	}
	// Some unrelated memory first, so the names below are rare in it.
	for i := range 5 {
		ask(fmt.Sprintf("weather talk %d: sunny then cloudy, rain later", i), "Sounds like a mixed day.")
	}
	const early = "We applied to Brightwater agency with Okonkwo in Pinecrest"
	ask(early, "Good luck with the application.")
	const later = "The meeting with Okonkwo at Brightwater in Pinecrest went well! Which agency was that again?"
	const answer = "That was Brightwater agency: you applied with Okonkwo in Pinecrest."
	ask(later, answer)
	s.waitStored(14)
	if body := string(s.Fake.Requests()[6].Body); !strings.Contains(body, early) {
		t.Fatalf("the second conversation's frame lacks the first turn: %s", body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.scalar(`SELECT COALESCE((SELECT seq FROM chain_heads WHERE tenant_id = $1), 0)`, s.TenantID) <
		s.scalar(`SELECT seq FROM tenant_heads WHERE tenant_id = $1`, s.TenantID) {
		if time.Now().After(deadline) {
			t.Fatal("the chain writer did not catch up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	edge := func(rel, src, dst string) int64 {
		return s.scalar(`SELECT count(*) FROM chain_edges e
			JOIN items s ON s.tenant_id = e.tenant_id AND s.id = e.src_id
			JOIN items d ON d.tenant_id = e.tenant_id AND d.id = e.dst_id
			WHERE e.tenant_id = $1 AND e.relation = $2 AND s.body = $3 AND d.body = $4`, s.TenantID, rel, src, dst)
	}
	if edge("thread", later, early) != 1 {
		t.Errorf("no thread from the later turn to the one it continues")
	}
	if edge("evidence", answer, early) != 1 {
		t.Errorf("no evidence edge from the reply to the frame item it drew on")
	}
	if n := s.scalar(`SELECT count(*) FROM chain_edges e JOIN items d ON d.tenant_id = e.tenant_id AND d.id = e.dst_id
		WHERE e.tenant_id = $1 AND d.body LIKE 'weather talk%'`, s.TenantID); n != 0 {
		t.Errorf("%d edges to unrelated turns", n)
	}
}
