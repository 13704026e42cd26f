package importer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/importer"
	"github.com/perpetuity/perpetuity/memory/store"
)

// lines is an import of n conversations <p>c1..<p>cn of perLine turns
// each; the text of turn j of line i is "<p>line i turn j".
func lines(p string, n, perLine int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `{"conversation": "%sc%d", "turns": [`, p, i)
		for j := range perLine {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"role": "user", "text": "%sline %d turn %d", "at": "2024-01-01T00:00:00Z"}`, p, i, j)
		}
		b.WriteString("]}\n")
	}
	return b.String()
}

// cancelAt cancels the import's context when the turn with this text is
// captured, and records whether any capture saw its context ended.
type cancelAt struct {
	next   importer.Capturer
	text   string
	cancel context.CancelFunc

	mu        sync.Mutex
	cancelled bool
	sawDone   int
}

func (c *cancelAt) Capture(ctx context.Context, m memory.Message) (store.Captured, error) {
	c.mu.Lock()
	if m.Text == c.text {
		c.cancel()
		c.cancelled = true
	}
	if ctx.Err() != nil {
		c.sawDone++
	}
	c.mu.Unlock()
	return c.next.Capture(ctx, m)
}

// TestImportStopsAtLineBoundary cancels the import's context in the middle
// of line 2: line 2 is stored whole, on a context the cancellation does not
// reach, and the import stops before line 3, naming it.
func TestImportStopsAtLineBoundary(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	capt := &cancelAt{next: f.eng, text: "line 2 turn 0", cancel: cancel}
	res, err := importer.New(f.db, capt).Import(ctx, f.who(), strings.NewReader(lines("", 4, 3)), nil)
	var st *importer.Stopped
	if !errors.As(err, &st) || st.Line != 3 || st.Limited || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want stopped before line 3 by the cancellation", err)
	}
	if !strings.Contains(err.Error(), "stopped before line 3") {
		t.Fatalf("message %q does not name the line", err)
	}
	if res != (importer.Result{Conversations: 2, Turns: 6}) {
		t.Fatalf("result %+v, want lines 1 and 2 whole", res)
	}
	if !capt.cancelled || capt.sawDone != 0 {
		t.Fatalf("cancelled %v; %d captures of the line in flight saw the cancellation", capt.cancelled, capt.sawDone)
	}
	if n := f.messageCount(t); n != 6 {
		t.Fatalf("%d messages stored, want 6", n)
	}
	if got := f.turns(t, f.nt.UserName, "c2"); len(got) != 3 {
		t.Fatalf("line 2 has %d turns stored, want all 3", len(got))
	}

	// Already ended: nothing at all.
	done, stop := context.WithCancel(context.Background())
	stop()
	res, err = importer.New(f.db, f.eng).Import(done, f.who(), strings.NewReader("\n"+lines("", 1, 1)), nil)
	if !errors.As(err, &st) || st.Line != 2 || res != (importer.Result{}) {
		t.Fatalf("import on an ended context: %+v, %v; want stopped before line 2 with nothing", res, err)
	}
}

// allowance is a Budget that allows lines while it has tokens left, and
// records what it was charged.
type allowance struct {
	left    int
	charged []int
}

func (a *allowance) Allow(context.Context) (time.Duration, error) {
	if a.left <= 0 {
		return 2500 * time.Millisecond, errors.New("tokens per minute spent")
	}
	return 0, nil
}

func (a *allowance) Charge(tokens int) {
	a.left -= tokens
	a.charged = append(a.charged, tokens)
}

// TestImportBudget: a line starts only while the budget allows, what it
// stored is charged after it, and the import stops before the first line
// the budget refuses. Lines already stored (the file sent again to resume)
// cost nothing.
func TestImportBudget(t *testing.T) {
	t.Parallel()
	const perLine, total = 4, 5
	// Each turn's text is "line i turn j": 13 bytes, four to a token.
	lineTokens := (perLine*13 + 3) / 4
	tests := []struct {
		name      string
		allow     int // tokens; the line that takes it to 0 or below is the last
		wantLines int
		wantStop  int // 0: not stopped
	}{
		{"budget enough", 100 * lineTokens, total, 0},
		{"spent exactly by line 2", 2 * lineTokens, 2, 3},
		{"a line may overshoot", lineTokens + 1, 2, 3},
		{"spent before line 1", 0, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			im := importer.New(f.db, f.eng)
			b := &allowance{left: tt.allow}
			res, err := im.ImportWithin(context.Background(), f.who(), strings.NewReader(lines("", total, perLine)), b, nil)
			var st *importer.Stopped
			switch {
			case tt.wantStop == 0 && err != nil:
				t.Fatal(err)
			case tt.wantStop > 0 && (!errors.As(err, &st) || st.Line != tt.wantStop || !st.Limited || st.RetryAfter != 2500*time.Millisecond):
				t.Fatalf("err = %v, want stopped by the budget before line %d", err, tt.wantStop)
			}
			if res.Conversations != tt.wantLines || res.Turns != tt.wantLines*perLine || f.messageCount(t) != res.Turns {
				t.Fatalf("result %+v with %d stored, want %d whole lines", res, f.messageCount(t), tt.wantLines)
			}
			want := slices.Repeat([]int{lineTokens}, tt.wantLines)
			if !slices.Equal(b.charged, want) {
				t.Fatalf("charged %v, want %v", b.charged, want)
			}
			// Resuming with the whole file on a budget of one token: the
			// stored lines cost nothing, the first new one is stored.
			again := &allowance{left: 1}
			res, _ = im.ImportWithin(context.Background(), f.who(), strings.NewReader(lines("", total, perLine)), again, nil)
			want = slices.Repeat([]int{0}, tt.wantLines)
			if tt.wantLines < total {
				want = append(want, lineTokens)
			}
			if res.Duplicates != tt.wantLines*perLine || !slices.Equal(again.charged, want) {
				t.Fatalf("resumed: %+v, charged %v, want %v", res, again.charged, want)
			}
		})
	}
}

// stall blocks every capture after the first until its context ends: a
// database that stopped answering.
type stall struct {
	next importer.Capturer
	n    int
}

func (s *stall) Capture(ctx context.Context, m memory.Message) (store.Captured, error) {
	s.n++
	if s.n > 1 {
		<-ctx.Done()
		return store.Captured{}, ctx.Err()
	}
	return s.next.Capture(ctx, m)
}

// apart records whether each capture asked to commit apart.
type apart struct {
	next importer.Capturer
	got  []bool
}

func (a *apart) Capture(ctx context.Context, m memory.Message) (store.Captured, error) {
	a.got = append(a.got, m.CommitApart)
	return a.next.Capture(ctx, m)
}

// TestImportCommitsApart: every turn's capture commits only once the
// importer saw it succeed (store.Capture.CommitApart), so what the import
// counts, and the limits charge, is what it stored: a capture queued with
// its COMMIT could be stored after the client left and the count ended.
func TestImportCommitsApart(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := &apart{next: f.eng}
	res, err := importer.New(f.db, a).Import(context.Background(), f.who(), strings.NewReader(lines("apart-", 2, 3)), nil)
	if err != nil || res.Turns != 6 {
		t.Fatalf("import: %+v, %v", res, err)
	}
	if !slices.Equal(a.got, slices.Repeat([]bool{true}, 6)) {
		t.Fatalf("captures committing apart: %v", a.got)
	}
}

// TestImportCaptureTimeout: the line in flight is detached from the
// caller, so a stalled capture ends at the capture timeout, not never.
func TestImportCaptureTimeout(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// Long enough for the first, real capture on a loaded machine; the
	// second stalls until the timeout whatever it is.
	im := importer.New(f.db, &stall{next: f.eng}, importer.CaptureTimeout(2*time.Second))
	start := time.Now()
	res, err := im.Import(context.Background(), f.who(), strings.NewReader(lines("", 2, 3)), nil)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "line 1: turn 1") {
		t.Fatalf("err = %v, want the stalled turn's capture timeout", err)
	}
	if res.Turns != 1 || time.Since(start) > 30*time.Second {
		t.Fatalf("result %+v after %v", res, time.Since(start))
	}
}

// budgetAfter refuses once n lines were charged.
type budgetAfter struct{ n int }

func (b *budgetAfter) Allow(context.Context) (time.Duration, error) {
	if b.n == 0 {
		return 2500 * time.Millisecond, errors.New("rate limit reached for this Perpetuity key on tokens per minute (TPM): limit 10")
	}
	b.n--
	return 0, nil
}

func (b *budgetAfter) Charge(int) {}

// TestHandlerStops: over HTTP a spent budget is a 429 with Retry-After
// naming the line to resume from and what was stored; a client that left
// mid-import stops at the next line, and the log says where.
func TestHandlerStops(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var logBuf bytes.Buffer
	var logMu sync.Mutex
	log := slog.New(slog.NewJSONHandler(lockedWriter{&logMu, &logBuf}, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	capt := &cancelAt{next: f.eng, text: "b line 2 turn 1", cancel: cancel}
	e := echo.New()
	e.POST("/perpetuity/import", importer.New(f.db, capt).Handler(func(c echo.Context) (memory.Who, importer.Budget, error) {
		if c.Request().Header.Get("X-Budget") == "one line" {
			return f.who(), &budgetAfter{n: 1}, nil
		}
		return f.who(), nil, nil
	}, 1<<20, log))

	// The budget allows one line of three.
	req := httptest.NewRequest(http.MethodPost, "/perpetuity/import", strings.NewReader(lines("", 3, 2)))
	req.Header.Set("X-Budget", "one line")
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	var b struct {
		Error struct {
			Message string
			Line    int
		}
		importer.Result
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "3" || b.Error.Line != 2 ||
		b.Result != (importer.Result{Conversations: 1, Turns: 2}) || !strings.Contains(b.Error.Message, "tokens per minute (TPM)") {
		t.Fatalf("spent budget: %d Retry-After %q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}

	// The client leaves during line 2 of another file.
	req = httptest.NewRequest(http.MethodPost, "/perpetuity/import", strings.NewReader(lines("b ", 4, 2))).WithContext(ctx)
	rec = httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	if rec.Code != 499 {
		t.Fatalf("client gone: %d %s", rec.Code, rec.Body)
	}
	if n := f.messageCount(t); n != 2+4 {
		t.Fatalf("%d messages stored, want 2 from the first import and 4 (two whole lines) from the second", n)
	}
	logMu.Lock()
	logged := logBuf.String()
	logMu.Unlock()
	var rec2 struct {
		Msg, Reason         string
		Line, Turns, Tenant int
	}
	found := false
	for _, l := range strings.Split(logged, "\n") {
		if json.Unmarshal([]byte(l), &rec2) == nil && rec2.Reason == "client left" {
			found = rec2.Msg == "import stopped" && rec2.Line == 3 && rec2.Turns == 4 && rec2.Tenant == int(f.nt.TenantID)
		}
	}
	if !found {
		t.Fatalf("no log line for the stop at line 3 with 4 turns:\n%s", logged)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
