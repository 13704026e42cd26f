// Package guard keeps a panic in background work from ending the process.
// Echo's recovery covers a request's own goroutine only; the work a turn
// hands to others (the capture beside its frame, the reply's capture and
// record, deferred heat writes, the chain writer's catch-ups, console
// jobs) would otherwise take every tenant's open streams down with it,
// and a stored item that makes the chain writer panic would do so again
// at every start. Guarded, such a panic is that one job's error: the
// caller reports it and retries as it would any failure.
package guard

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
)

// Panic is a recovered panic, as an error.
type Panic struct {
	// What is the panic's runtime error text, or only the type of any
	// other value: a value panicked with may hold whatever was in scope
	// (a key, a message), and this error goes to the log.
	What  string
	Stack []byte
}

func (p *Panic) Error() string { return fmt.Sprintf("panic: %s\n%s", p.What, p.Stack) }

// Run calls f and returns its error, or the panic it raised as a *Panic.
func Run(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = recovered(r)
		}
	}()
	return f()
}

func recovered(r any) *Panic {
	p := &Panic{What: fmt.Sprintf("value of type %T", r), Stack: debug.Stack()}
	var re runtime.Error
	if e, ok := r.(error); ok && errors.As(e, &re) {
		p.What = re.Error()
	}
	return p
}
