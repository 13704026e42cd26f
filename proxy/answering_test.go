package proxy

import (
	"context"
	"testing"
	"time"
)

// TestAnsweringWait: a repeat waits for the reply of a turn whose
// response ended to be captured; for one still answering only the grace;
// for another question or another conversation not at all.
func TestAnsweringWait(t *testing.T) {
	t.Parallel()
	k := convTurn{tenant: 1, conv: 7}
	for _, tc := range []struct {
		name  string
		grace time.Duration
		// setup notes the turns in flight and returns what, done after
		// the wait started, lets it return; nil: it returns on its own.
		setup func(a *answering) func()
	}{
		{"nothing in flight", time.Hour, func(*answering) func() { return nil }},
		{"another question", time.Hour, func(a *answering) func() {
			a.begin(k, "stop").ended()
			return nil
		}},
		{"another conversation", time.Hour, func(a *answering) func() {
			a.begin(convTurn{tenant: 1, conv: 8}, "continue").ended()
			return nil
		}},
		{"a reply still to capture", time.Hour, func(a *answering) func() {
			f := a.begin(k, "continue")
			f.ended()
			return f.done
		}},
		{"a response ending within the grace", time.Hour, func(a *answering) func() {
			f := a.begin(k, "continue")
			return func() { f.ended(); f.done() }
		}},
		{"two turns asking it", time.Hour, func(a *answering) func() {
			f, g := a.begin(k, "continue"), a.begin(k, "continue")
			f.ended()
			g.ended()
			return func() { f.done(); g.done() }
		}},
		{"still answering past the grace", time.Millisecond, func(a *answering) func() {
			a.begin(k, "continue")
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newAnswering()
			a.grace = tc.grace
			release := tc.setup(a)
			returned := make(chan struct{})
			go func() {
				a.wait(context.Background(), k, "continue")
				close(returned)
			}()
			if release != nil {
				select {
				case <-returned:
					t.Fatal("returned before the turn in flight let it")
				case <-time.After(30 * time.Millisecond):
				}
				release()
			}
			select {
			case <-returned:
			case <-time.After(10 * time.Second):
				t.Fatal("still waiting")
			}
		})
	}
}

// TestAnsweringWaitEndsWithContext: a wait ends with its context.
func TestAnsweringWaitEndsWithContext(t *testing.T) {
	t.Parallel()
	a := newAnswering()
	k := convTurn{tenant: 1, conv: 7}
	a.begin(k, "continue").ended()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	a.wait(ctx, k, "continue")
	if ctx.Err() == nil {
		t.Fatal("returned before its context ended")
	}
}
