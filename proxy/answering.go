package proxy

import (
	"context"
	"sync"
)

// A client that sends only its newest message says "yes" again as a new
// turn once the first "yes" was answered, and sends it again as a retry
// when it was not. The store tells the two apart by whether a complete
// reply follows the first (store.Capture's Appended), but a reply is
// captured after its response went out, so a quick client's next "yes"
// can reach the store before the answer to its first one does. answering
// holds, per conversation, the questions of this process's turns whose
// reply is not captured yet; a question that repeats one of them waits
// for that turn to end before it is captured. Nothing else waits: a
// question that repeats nothing in flight, or any question of a request
// that sends its history, is captured at once.
type answering struct {
	mu sync.Mutex
	m  map[convTurn][]*inFlight
}

type convTurn struct{ tenant, conv int64 }

type inFlight struct {
	question string
	done     chan struct{}
}

func newAnswering() *answering { return &answering{m: map[convTurn][]*inFlight{}} }

// begin notes a turn of conversation k asking question; the function it
// returns ends it, once the turn's reply is captured (or will not be).
func (a *answering) begin(k convTurn, question string) func() {
	f := &inFlight{question: question, done: make(chan struct{})}
	a.mu.Lock()
	a.m[k] = append(a.m[k], f)
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		fs := a.m[k]
		for i, g := range fs {
			if g == f {
				fs = append(fs[:i], fs[i+1:]...)
				break
			}
		}
		if len(fs) == 0 {
			delete(a.m, k)
		} else {
			a.m[k] = fs
		}
		a.mu.Unlock()
		close(f.done)
	}
}

// wait returns once no turn of conversation k asking question is in
// flight, or ctx ends.
func (a *answering) wait(ctx context.Context, k convTurn, question string) {
	for {
		a.mu.Lock()
		var f *inFlight
		for _, g := range a.m[k] {
			if g.question == question {
				f = g
				break
			}
		}
		a.mu.Unlock()
		if f == nil {
			return
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return
		}
	}
}
