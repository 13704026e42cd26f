package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/arena/synth"
	"github.com/perpetuity/perpetuity/memory/chain"
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/importer"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/memory/text"
)

// kit is the production analysis (the embedded tokenizer and the shipped
// dictionary) and an engine built on it, as serving builds them.
type kit struct {
	counter *text.Counter
	dict    *dict.Dictionary
	vocab   *Vocabulary
	db      *store.DB
	// dense is the version with word vectors measured beside dict (v3),
	// its lexicon and vectors; space the dense space of a tenant created on
	// it (the dictionary's common component, memory/dense.go).
	dense memory.DictTerms
	space *dict.Space
	// chainLex is the lexicon the chain graph's rules read (serve's).
	chainLex chain.Lexicon
}

func newKit(ctx context.Context, db *store.DB, version int) (*kit, error) {
	c, err := text.NewCounter()
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	d, err := dict.Builtin(version)
	if err != nil {
		return nil, err
	}
	if _, err := db.EnsureDictionary(ctx, d.Version, d.Name, d.Entries()); err != nil {
		return nil, err
	}
	v, err := NewVocabulary(d)
	if err != nil {
		return nil, err
	}
	lex, err := dict.Builtin(chain.LexiconVersion)
	if err != nil {
		return nil, err
	}
	k := &kit{counter: c, dict: d, vocab: v, db: db, chainLex: lex}
	if k.dense, k.space, err = loadDense(ctx, db); err != nil {
		return nil, err
	}
	return k, nil
}

// engine is a fresh engine (its own, empty, resident arenas), configured
// as serve runs it: reheats written after the frame is returned.
func (k *kit) engine() *memory.Engine { return k.engineOn(k.db) }

func (k *kit) engineOn(db *store.DB) *memory.Engine { return k.engineWith(db, nil) }

// engineWith is engineOn with the chain graph's writer, which its captures
// kick as serve's do (nil: none).
func (k *kit) engineWith(db *store.DB, w *chain.Writer) *memory.Engine {
	opt := memory.Options{DeferReheat: true}
	if w != nil {
		opt.Chain = w
	}
	return memory.New(db, memory.TextAnalyzer{C: k.counter}, memory.DictTerms{D: k.dict}, opt)
}

// engineBudget is engineOn with an arena budget (memory.Options.ArenaBudget).
func (k *kit) engineBudget(bytes int64) *memory.Engine {
	return memory.New(k.db, memory.TextAnalyzer{C: k.counter}, memory.DictTerms{D: k.dict}, memory.Options{DeferReheat: true, ArenaBudget: bytes})
}

// CaptureResult is section 3: storing one message against the cheapest
// durable commit, and a sequential import.
type CaptureResult struct {
	Floor   Rounds // the cheapest durable commit (commitFloor)
	Trip    Rounds // SELECT 1
	Capture Rounds // engine.Capture of one chat message
	// Apart is a live question's capture, which sends COMMIT as a round
	// trip of its own (memory.Message.CommitApart), on an untraced engine.
	Apart  Rounds
	Words  int // mean words per captured message
	Tokens int // mean model tokens per captured message

	// Statements is where a capture's time goes, per statement, as the
	// client sees it (mean per capture).
	Statements []Stmt

	ImportTurns int
	ImportTook  time.Duration
	ImportRate  float64 // items per second

	// ChainLag is how long after the import's last turn the chain writer,
	// running beside every capture above, reached the tenant's head;
	// ChainEdges what it wrote, ChainFailed its failed catch-ups (retried).
	ChainLag    time.Duration
	ChainEdges  int
	ChainFailed int
}

// messages are chat-sized texts from the synthetic corpus: two turns
// joined, ~40 words.
func (k *kit) messages(n int, seed uint64) []string {
	items := synth.Corpus(synth.Config{Seed: seed, Items: 2 * n, Users: 1, Vocab: SynthVocab})
	out := make([]string, n)
	for i := range out {
		out[i] = Text(k.vocab.Tokens(&items[2*i])) + " " + Text(k.vocab.Tokens(&items[2*i+1]))
	}
	return out
}

func runCapture(ctx context.Context, db *store.DB, dbURL string, k *kit, t *Tenant, cfg Config, lg *logger) (*CaptureResult, error) {
	tr := newStmtTracer()
	tdb, err := tracedStore(ctx, dbURL, tr)
	if err != nil {
		return nil, err
	}
	defer tdb.Close()
	// The writer is on the untraced pool: its statements are not a
	// capture's, though they share the cores and the database with them.
	bw := startWriter(ctx, db, k)
	defer bw.close()
	eng := k.engineWith(tdb, bw.w)
	conv, err := db.EnsureConversation(ctx, t.ID, t.Users[0], "h:bench-capture", "capture")
	if err != nil {
		return nil, err
	}
	who := memory.Who{TenantID: t.ID, UserID: t.Users[0], UserName: "u1", ConversationID: conv}
	msgs := k.messages(cfg.CaptureN*cfg.Rounds+20, cfg.Seed+7)
	res := &CaptureResult{}
	var words, tokens int
	for _, m := range msgs {
		words += len(strings.Fields(m))
		tokens += k.counter.Count(m)
	}
	res.Words, res.Tokens = words/len(msgs), tokens/len(msgs)

	// The live questions go to a conversation of their own: in serving a
	// question and its reply are captured one after the other too.
	qconv, err := db.EnsureConversation(ctx, t.ID, t.Users[0], "h:bench-capture-live", "capture live")
	if err != nil {
		return nil, err
	}
	qwho := who
	qwho.ConversationID = qconv
	apartEng := k.engineWith(db, bw.w)
	pos, qpos := 0, 0
	capture := func() error {
		_, err := eng.Capture(ctx, memory.Message{Who: who, Role: []string{"user", "assistant"}[pos%2], Text: msgs[pos], Position: pos})
		pos++
		return err
	}
	apart := func() error {
		_, err := apartEng.Capture(ctx, memory.Message{Who: qwho, Role: "user", Text: msgs[len(msgs)-1-qpos%len(msgs)], Position: 2 * qpos, CommitApart: true})
		qpos++
		return err
	}
	for range 20 { // warm the pool's connections and the statement caches
		if err := capture(); err != nil {
			return nil, fmt.Errorf("capture: %w", err)
		}
		if err := apart(); err != nil {
			return nil, fmt.Errorf("capture: %w", err)
		}
	}
	tr.reset()
	var floor, trip, capt, apt [][]time.Duration
	for round := range cfg.Rounds {
		lg.printf("capture: round %d/%d", round+1, cfg.Rounds)
		var f, tr, c, a []time.Duration
		for i := range cfg.CaptureN {
			steps := []func() error{
				func() error { return commitFloor(ctx, db, t) },
				func() error { _, err := db.Pool.Exec(ctx, "SELECT 1"); return err },
				capture,
				apart,
			}
			dst := []*[]time.Duration{&f, &tr, &c, &a}
			for j := range steps {
				k := (i + j) % len(steps) // rotate the order
				t0 := time.Now()
				if err := steps[k](); err != nil {
					return nil, fmt.Errorf("capture round: %w", err)
				}
				*dst[k] = append(*dst[k], time.Since(t0))
			}
		}
		floor, trip, capt, apt = append(floor, f), append(trip, tr), append(capt, c), append(apt, a)
	}
	res.Floor, res.Trip, res.Capture, res.Apart = Fold(floor), Fold(trip), Fold(capt), Fold(apt)
	res.Statements = tr.per(cfg.CaptureN * cfg.Rounds)

	lg.printf("capture: import of %d turns", cfg.ImportTurns)
	body, err := importJSONL(k.messages(cfg.ImportTurns, cfg.Seed+11))
	if err != nil {
		return nil, err
	}
	im := importer.New(db, eng)
	t0 := time.Now()
	got, err := im.Import(ctx, memory.Who{TenantID: t.ID, UserID: t.Users[0], UserName: "u1"}, bytes.NewReader(body), nil)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	res.ImportTook = time.Since(t0)
	res.ImportTurns = got.Turns
	res.ImportRate = float64(got.Turns) / res.ImportTook.Seconds()

	lag, caught, err := waitChain(ctx, db, t.ID, time.Minute)
	if err != nil {
		return nil, err
	}
	failed, last := bw.close()
	if !caught {
		return nil, fmt.Errorf("capture: the chain writer did not catch up within %s of the import (%d failures, last: %v)", lag.Round(time.Second), failed, last)
	}
	edges, err := db.ChainEdges(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	res.ChainLag, res.ChainEdges, res.ChainFailed = lag, len(edges), failed
	lg.printf("capture: the chain writer caught up %s after the import (%d edges, %d failed catch-ups)", lag.Round(time.Millisecond), len(edges), failed)
	return res, nil
}

// importJSONL is one conversation of the given turns in the importer's
// format, a minute apart.
func importJSONL(texts []string) ([]byte, error) {
	type turn struct {
		Role string    `json:"role"`
		Text string    `json:"text"`
		At   time.Time `json:"at"`
	}
	start := time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC)
	turns := make([]turn, len(texts))
	for i, s := range texts {
		turns[i] = turn{Role: []string{"user", "assistant"}[i%2], Text: s, At: start.Add(time.Duration(i) * time.Minute)}
	}
	return json.Marshal(map[string]any{"conversation": "bench-import", "turns": turns})
}
