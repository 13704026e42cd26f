package proxy

import (
	"context"
	"sync"
	"time"
)

// A client that sends only its newest message says "yes" again as a new
// turn once the first "yes" was answered, and sends it again as a retry
// when it was not. The store tells the two apart by whether a complete
// reply follows the first (store.Capture's Appended), but a reply is
// captured after its response went out, so a quick client's next "yes"
// can reach the store before the answer to its first one does. answering
// holds, per conversation, the questions of this process's turns whose
// reply is not captured yet; a question that repeats one of them waits
// for that turn's reply to be captured before it is captured itself.
//
// Only a turn whose response has ended is waited for to the end. One still
// answering is waited for only briefly, for a response ending as the
// repeat comes in: a client does not repeat what it has no answer to, so
// a question sent again meanwhile is a retry, or a harness's side request
// quoting its prompt (Claude Code's topic check), neither of which may
// wait for a whole reply. Nothing else waits: a question that repeats
// nothing in flight, or any question of a request that sends its history,
// is captured at once.
type answering struct {
	mu sync.Mutex
	m  map[convTurn][]*inFlight
	// grace is how long a repeat waits for a turn still answering to end.
	grace time.Duration
}

// answeringGrace is answering.grace: far more than the microseconds
// between a response's last byte and its handler going on, far less than
// a reply a model writes.
const answeringGrace = 50 * time.Millisecond

type convTurn struct{ tenant, conv int64 }

type inFlight struct {
	question string
	ended    chan struct{} // the response has ended
	done     chan struct{} // the reply's capture has ended
}

func newAnswering() *answering {
	return &answering{m: map[convTurn][]*inFlight{}, grace: answeringGrace}
}

// turnInFlight is a turn noted in answering: ended once its response
// has, done once its reply's capture has. Each may be called more than
// once.
type turnInFlight struct{ ended, done func() }

// begin notes a turn of conversation k asking question.
func (a *answering) begin(k convTurn, question string) turnInFlight {
	f := &inFlight{question: question, ended: make(chan struct{}), done: make(chan struct{})}
	a.mu.Lock()
	a.m[k] = append(a.m[k], f)
	a.mu.Unlock()
	end := sync.OnceFunc(func() { close(f.ended) })
	return turnInFlight{ended: end, done: sync.OnceFunc(func() {
		end()
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
	})}
}

// wait returns once no turn of conversation k asking question has an
// ended response whose reply is still to be captured (a turn still
// answering is given the grace to end), or ctx ends.
func (a *answering) wait(ctx context.Context, k convTurn, question string) {
	var seen map[*inFlight]bool // made on the first turn found: most calls find none
	for {
		a.mu.Lock()
		var f *inFlight
		for _, g := range a.m[k] {
			if g.question == question && !seen[g] {
				f = g
				break
			}
		}
		a.mu.Unlock()
		if f == nil {
			return
		}
		if seen == nil {
			seen = map[*inFlight]bool{}
		}
		seen[f] = true
		t := time.NewTimer(a.grace)
		select {
		case <-f.ended:
			t.Stop()
			select {
			case <-f.done:
			case <-ctx.Done():
				return
			}
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}
