package limits

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

// TestImportBudget drives an import's token budget through a script of
// lines and clock steps: a line starts while the bucket is not empty and
// the day not used up, what it stored is charged after it (one line may
// overshoot into debt), and the next line waits for refill.
func TestImportBudget(t *testing.T) {
	t.Parallel()
	k := store.KeyIdentity{TenantID: 1, KeyID: 7}
	type step struct {
		wait    time.Duration
		charge  int // the line's stored tokens, when it is allowed
		refused bool
		what    string
		retry   int64
	}
	tests := []struct {
		name   string
		limits store.Limits
		steps  []step
	}{
		{"tokens per minute", store.Limits{TokensPerMinute: 1000}, []step{
			{charge: 400}, {charge: 400}, {charge: 400}, // 200 left, then 200 in debt
			{refused: true, what: "tokens per minute (TPM)", retry: 13}, // (200+1)/1000 of a minute
			{wait: 12 * time.Second, refused: true, what: "tokens per minute (TPM)", retry: 1},
			{wait: time.Second, charge: 400},
		}},
		{"tokens per day", store.Limits{TokensPerDay: 1000}, []step{
			{charge: 600}, {charge: 600},
			{refused: true, what: "tokens per day (TPD)", retry: 12 * 3600},
			{wait: 12 * time.Hour, charge: 600},
		}},
		{"requests alone do not limit tokens", store.Limits{RequestsPerMinute: 1}, []step{
			{charge: 1 << 30}, {charge: 1 << 30},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lm, c := newTestLimiter(&fakeLimits{l: map[int64]store.Limits{1: tt.limits}}, store.Limits{})
			b := lm.Budget(k)
			for i, s := range tt.steps {
				c.advance(s.wait)
				wait, err := b.Allow(context.Background())
				if (err != nil) != s.refused {
					t.Fatalf("step %d: %v, want refused=%v", i, err, s.refused)
				}
				if s.refused {
					if !strings.Contains(err.Error(), s.what) || RetryAfter(wait) != s.retry {
						t.Fatalf("step %d: %v after %ds, want %s after %ds", i, err, RetryAfter(wait), s.what, s.retry)
					}
					continue
				}
				b.Charge(s.charge)
			}
		})
	}
	// The zero budget (an unlimited caller) refuses nothing.
	b := Budget{}
	b.Charge(1 << 30)
	if _, err := b.Allow(context.Background()); err != nil {
		t.Fatal(err)
	}
}
