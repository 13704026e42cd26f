package lab

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/perpetuity/perpetuity/app"
)

// progress draws a one-line bar on stderr, at most ten times a second.
type progress struct {
	w    io.Writer
	mu   sync.Mutex
	last time.Time
	line bool
}

func newProgress(w io.Writer) *progress { return &progress{w: app.ProgressOut(w)} }

func (p *progress) update(what string, n, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n < total && time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	const width = 30
	fill := 0
	if total > 0 {
		fill = n * width / total
	}
	bar := bytes.Repeat([]byte{' '}, width)
	for i := 0; i < fill; i++ {
		bar[i] = '='
	}
	fmt.Fprintf(p.w, "\r%-7s [%s] %d/%d", what, bar, n, total)
	p.line = true
}

func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.line {
		fmt.Fprintln(p.w)
		p.line = false
	}
}
