package memory

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/perpetuity/perpetuity/memory/arena"
	"github.com/perpetuity/perpetuity/memory/store"
)

// Analyzer is the text side the engine needs: model tokens, the stored
// token sequence, and chunking of long messages.
type Analyzer interface {
	Count(s string) int
	Normalize(s string) []string
	// Chunk cuts s into pieces of at most maxTokens, with their counts.
	Chunk(s string, maxTokens int) (chunks []string, counts []int)
	// ChunkContent returns, per chunk, the part that is the turn's content:
	// harness scaffolding (system reminders, environment dumps) is stored
	// verbatim but does not crowd retrieval.
	ChunkContent(s string, chunks []string) []string
}

// Dictionary derives retrieval rows from stored tokens, and query terms
// from a question's tokens.
type Dictionary interface {
	Version() int
	Terms(tokens []string) (ids []uint32, freqs []uint16, length int)
	QueryTerms(tokens []string) []uint32
}

// Store is the persistence the engine needs.
type Store interface {
	CatchUpStore
	Capture(ctx context.Context, c store.Capture) (store.Captured, error)
	ReadFrameInputs(ctx context.Context, tenantID int64, r store.FrameRead) (store.FrameInputs, error)
	ReadFrame(ctx context.Context, tenantID, watermark int64, dictVersion int, r store.FrameRead, caughtUp func(store.CatchUp)) (store.FrameInputs, error)
	RenderItems(ctx context.Context, tenantID int64, ids []int64) ([]store.RenderItem, error)
	ReadItemTexts(ctx context.Context, tenantID int64, ids []int64, keys []store.LabelKey, known store.Labels) (store.ItemTexts, error)
	ItemSpeakers(ctx context.Context, tenantID int64, ids []int64) ([]store.ItemText, error)
	ApplyReheats(ctx context.Context, tenantID, viewerID, clock int64, rs []store.Reheat) error
	FoldStats(ctx context.Context, tenantID int64) (int, error)
	ChainItems(ctx context.Context, tenantID, userID, itemID int64, before, after int) ([]int64, error)
	ChainLinks(ctx context.Context, tenantID, userID, itemID int64, limit int) ([]store.ChainLink, error)
}

// Options tune the engine.
type Options struct {
	// ChunkTokens is the largest item, in model tokens; longer messages are split.
	ChunkTokens int
	// BaseTau is the decay constant, in clock tokens, of an item of average novelty.
	BaseTau float64
	// Ceiling is the default frame cap in model tokens.
	Ceiling int
	// Floor is the smallest budget a frame gets.
	Floor int
	// AutoCeiling is the largest budget the score spread alone can give a
	// frame (a broad question); Ceiling still caps it.
	AutoCeiling int
	// Candidates is how many ranked items retrieval considers per turn.
	Candidates int
	// Recent is how many items of the current conversation are always shown.
	Recent int
	// Workers is how many goroutines a scan uses at most (0: GOMAXPROCS).
	Workers int
	// Scans share the process through a gate (gate.go): each tenant's scans
	// hold at most ScanShare worker slots at once (0: GOMAXPROCS), all
	// scans at most ScanSlots (0: 4*ScanShare); a scan waits at most
	// ScanWait for its slots (0: 10s) and a tenant may have at most
	// ScanQueue scans waiting (0: 256), else ErrBusy.
	ScanShare, ScanSlots, ScanQueue int
	ScanWait                        time.Duration
	// K1 and B are the BM25 parameters (0: the arena's defaults).
	K1, B float32
	// Expansion tunes pseudo-relevance feedback (zero: the defaults).
	Expansion expansion
	// Context tunes how a match brings its conversation neighbours along.
	Context Context
	// DatedRank is the retrieval rank a turn born on a date the question
	// names is lifted to when its words matched too, unless they ranked it
	// higher; one that did not match ranks lower (frame.go datedUnmatched).
	// 0: the default; negative: dates are not read.
	DatedRank int
	// DeferReheat writes a frame's reheats after Frame returns (the next
	// frame of the viewer waits for them); Errors receives the failures of
	// these and of the background folds of frequency counts.
	DeferReheat bool
	Errors      func(error)
	// FoldEvery: a capture whose tenant log position is a multiple of it
	// starts a background fold of the tenant's pending frequency counts
	// (statsfold.go; 0: 128, < 0: never).
	FoldEvery int
	// Chain is the chain graph (nil: none): captures kick its writer, and a
	// frame brings a strong match's chain neighbours along (chain.go).
	Chain ChainGraph
	// ItemCache bounds, in bytes, what the process keeps of the items its
	// frames render (itemcache.go; 0: 64 MiB; < 0: nothing).
	ItemCache int
	// ArenaBudget bounds, in bytes, the resident arenas (budget.go; <= 0:
	// unlimited, every tenant used stays loaded).
	ArenaBudget int64
	// SegmentItems is how many rows an arena segment a cold load leaves
	// holds (segments.go; 0: store.SegmentItems, < 0: none are written).
	SegmentItems int
}

// Context brings the turns around a match into the frame: the neighbours of
// the Hits best matches, ranked as if Lag places below their match. A
// question rarely shares words with its answer's reply ("it's a mix of
// drama and romance"), but often with the turn that asked. Hits < 0 turns
// it off.
type Context struct {
	Hits int
	Lag  int
	Prev bool // also the turn before a match, not only the reply after it
	// ChainHits is how many of the best matches bring their chain
	// neighbours (0: 5; < 0: none), at most ChainPer each (0: 4), ranked
	// ChainLag places below their match (0: Lag). Development set, server
	// frame: all-evidence 0.852 without, 0.863 with 5 and 4, 0.858 with 10
	// and 2 or 20 and 2 (open-domain loses a question), 0.854 with a
	// denser graph (MaxDF 16, 10 links, weight 5).
	ChainHits, ChainPer, ChainLag int
	// DenseHits replaces Hits under a hybrid scan (0: 20, or off with Hits), whose dense side
	// finds by meaning many of the replies a lexical scan reaches only as
	// neighbours: there the neighbours of matches 20 to 40 took a third of
	// a 2000-token frame for little evidence (development set, --dict 3:
	// recall @2000 0.843 with 40, 0.853 with 20).
	DenseHits int
}

// Expansion sets pseudo-relevance feedback: the top docs vote, terms words
// join the question, the strongest at weight beta. terms < 0 turns it off.
func Expansion(docs, terms int, beta float32) expansion {
	return expansion{docs: docs, terms: terms, beta: beta}
}

// Engine is the memory engine of one serving process.
type Engine struct {
	store   Store
	an      Analyzer
	dict    Dictionary // the version New was given
	opt     Options
	res     *residents
	dicts   *dictionaries // every dictionary version this process has needed
	vers    *versionCache // per tenant, the versions a capture writes rows for
	pending *reheats      // deferred reheats, per viewer
	folds   *tenantJobs   // background folds of frequency counts (statsfold.go)
	gate    *scanGate     // worker slots of the scans, shared fairly by tenants
	counts  *countCache   // token counts of rendered texts, by hash
}

// New builds an engine.
func New(st Store, an Analyzer, dict Dictionary, opt Options) *Engine {
	if opt.ChunkTokens <= 0 {
		opt.ChunkTokens = 512
	}
	if opt.BaseTau <= 0 {
		opt.BaseTau = 50_000
	}
	if opt.Ceiling <= 0 {
		opt.Ceiling = 8000
	}
	if opt.Floor <= 0 {
		opt.Floor = 600
	}
	if opt.AutoCeiling <= 0 {
		opt.AutoCeiling = 4000
	}
	if opt.Candidates <= 0 {
		opt.Candidates = 120
	}
	if opt.Recent <= 0 {
		opt.Recent = 6
	}
	if opt.Expansion == (expansion{}) {
		opt.Expansion = expansion{docs: 8, terms: 10, beta: 0.3}
	}
	if opt.Expansion.terms < 0 {
		opt.Expansion.terms = 0
	}
	if opt.DatedRank == 0 {
		opt.DatedRank = 3
	}
	if opt.Context == (Context{}) {
		opt.Context = Context{Hits: 40, Lag: 4}
	}
	if opt.Context.ChainHits == 0 {
		opt.Context.ChainHits = 5
	}
	if opt.Context.ChainPer <= 0 {
		opt.Context.ChainPer = 4
	}
	if opt.Context.ChainLag <= 0 {
		opt.Context.ChainLag = opt.Context.Lag
	}
	if opt.Context.DenseHits == 0 {
		opt.Context.DenseHits = 20
		if opt.Context.Hits < 0 {
			opt.Context.DenseHits = opt.Context.Hits // off is off
		}
	}
	if opt.Workers <= 0 {
		opt.Workers = runtime.GOMAXPROCS(0)
	}
	if opt.ScanShare <= 0 {
		opt.ScanShare = runtime.GOMAXPROCS(0)
	}
	if opt.ScanSlots <= 0 {
		opt.ScanSlots = 4 * opt.ScanShare
	}
	if opt.ScanQueue <= 0 {
		opt.ScanQueue = 256
	}
	if opt.ScanWait <= 0 {
		opt.ScanWait = 10 * time.Second
	}
	if opt.ItemCache == 0 {
		opt.ItemCache = 64 << 20
	}
	if opt.FoldEvery == 0 {
		opt.FoldEvery = 128
	}
	vs, _ := st.(versionStore)
	vecs := newVectorCache()
	if dt, ok := dict.(DictTerms); ok && dt.V == nil {
		// A shipped version's rows carry its vectors whoever built the engine.
		if v, err := vecs.get(dt.D.Version); err == nil && v != nil {
			dt.V = v
			dict = dt
		}
	}
	res := newResidents(st, arena.Options{Workers: opt.Workers, K1: opt.K1, B: opt.B}, vecs, newItemCache(opt.ItemCache), opt.ArenaBudget)
	if opt.Chain != nil {
		// The chain writer holds a graph per tenant and polls each it
		// holds: it follows the arenas out, and a capture or the next
		// frame's brings the tenant back.
		res.evicted = opt.Chain.Forget
	}
	if ss, ok := st.(SegmentStore); ok && opt.SegmentItems >= 0 {
		res.segs = newSegmentWriter(ss, cmp.Or(opt.SegmentItems, store.SegmentItems), opt.Errors)
	}
	return &Engine{store: st, an: an, dict: dict, opt: opt, res: res,
		dicts: newDictionaries(vs, dict, vecs), vers: newVersionCache(vs, dict.Version()), pending: newReheats(opt.Errors),
		folds: newTenantJobs(foldTimeout, opt.Errors), gate: newScanGate(opt.ScanSlots, opt.ScanShare, opt.ScanQueue, opt.ScanWait),
		counts: newCountCache(countCacheEntries)}
}

// admit waits for the tenant's turn to scan and returns the workers its
// scans may use and the function that hands them back.
func (e *Engine) admit(ctx context.Context, tenantID int64) (int, func(), error) {
	start := time.Now()
	n, err := e.gate.acquire(ctx, tenantID, e.opt.Workers)
	if d := time.Since(start); d > time.Millisecond {
		e.observer().Duration("scan_wait", d)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("scan: %w", err)
	}
	return n, func() { e.gate.release(tenantID, n) }, nil
}

// Fingerprint identifies a message within its conversation: the same role,
// position and text is the same message, so a retried request stores nothing new.
func Fingerprint(role string, position int, text string) []byte {
	h := sha256.New()
	h.Write([]byte(role))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(position))
	h.Write(b[:])
	h.Write([]byte(text))
	return h.Sum(nil)
}

// AppendedDigest is what the store makes an appended message's fingerprint
// of, with the position it chooses (store.Capture's Appended): the role
// and the text, as Fingerprint has them.
func AppendedDigest(role, text string) []byte {
	h := sha256.New()
	h.Write([]byte(role))
	h.Write([]byte{0})
	h.Write([]byte(text))
	return h.Sum(nil)
}

// Erasures is how many purges and redactions of the tenant this process
// has applied from the tenant log, whichever process made them. What a
// caller looked up of the tenant before the count moved (a conversation's
// id) may be gone since.
func (e *Engine) Erasures(tenantID int64) uint64 { return e.res.texts.epoch(tenantID) }

// Capture stores one message whole, or nothing.
func (e *Engine) Capture(ctx context.Context, m Message) (store.Captured, error) {
	defer func(start time.Time) { e.observer().Duration("capture", time.Since(start)) }(time.Now())
	if m.Role != "user" && m.Role != "assistant" {
		return store.Captured{}, fmt.Errorf("capture: role %q", m.Role)
	}
	if strings.TrimSpace(m.Text) == "" {
		return store.Captured{}, fmt.Errorf("capture: empty message")
	}
	if m.At.IsZero() {
		m.At = time.Now()
	}
	chunks, counts := e.an.Chunk(m.Text, e.opt.ChunkTokens)
	var fp []byte
	if m.Appended {
		fp = AppendedDigest(m.Role, m.Text)
	} else {
		fp = Fingerprint(m.Role, m.Position, m.Text)
	}
	c := store.Capture{
		TenantID: m.TenantID, UserID: m.UserID, ConversationID: m.ConversationID,
		Role: m.Role, Speaker: m.Speaker, Position: m.Position, Appended: m.Appended,
		Fingerprint: fp,
		Interrupted: m.Interrupted, CreatedAt: m.At, Hints: m.Hints, Sources: m.Sources, SentAfter: m.SentAfter,
		Stored: m.Stored, Sending: m.Sending, CommitApart: m.CommitApart,
	}
	contents := e.an.ChunkContent(m.Text, chunks)
	// An explicit speaker name is part of what the turn is about ("what did
	// Caroline paint?"), so its words join the stored tokens.
	speaker := e.an.Normalize(m.Speaker)
	for i, ch := range chunks {
		toks := append(append([]string(nil), speaker...), e.an.Normalize(contents[i])...)
		n := counts[i]
		c.ClockAdvance += n
		c.Items = append(c.Items, store.CaptureItem{
			Body: ch, Tokens: toks, TokenCount: n,
			Tau: e.opt.BaseTau, Novelty: 0,
		})
	}
	// Taken before the capture: a purge applied while it runs may have
	// removed what it stored.
	epoch := e.res.texts.epoch(m.TenantID)
	got, err := e.captureAllVersions(ctx, c)
	if err == nil && !got.Duplicate {
		// The live question and the conversation's latest turns are in
		// most of the frames that follow.
		e.res.texts.put(m.TenantID, epoch, got.Items)
		e.res.own(m.TenantID, got, c)
		if e.opt.Chain != nil {
			e.opt.Chain.Kick(m.TenantID)
		}
		if e.opt.FoldEvery > 0 && got.Seq%int64(e.opt.FoldEvery) == 0 {
			e.startFold(m.TenantID)
		}
	}
	return got, err
}

func toInt32(v []uint32) []int32 {
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out
}

func toInt16(v []uint16) []int16 {
	out := make([]int16, len(v))
	for i, x := range v {
		if x > 32767 {
			x = 32767
		}
		out[i] = int16(x)
	}
	return out
}

// padFirst stands in front of a frame that would otherwise start with the
// assistant, which Anthropic refuses.
const padFirst = "(continued from earlier)"

// Alternate merges consecutive turns of one role and pads the start, so the
// result alternates user/assistant starting with the user, as both
// providers require.
func Alternate(in []Turn) []Turn {
	out, _ := alternate(in)
	return out
}

// alternate is Alternate with, for each turn it returns, the turns of in it
// was joined from, by index (padded: -1; the render counts their tokens
// part by part). A run of one role is joined once, not concatenated turn
// by turn: a frame of one speaker's turns is a run of dozens (quadratic
// copying).
func alternate(in []Turn) ([]Turn, [][]int) {
	out := make([]Turn, 0, len(in)+1)
	parts := make([][]int, 0, len(in)+1)
	for i, t := range in {
		if t.Text == "" {
			continue
		}
		if len(out) == 0 && t.Role != "user" {
			out = append(out, Turn{Role: "user", Text: padFirst})
			parts = append(parts, []int{-1})
		}
		if k := len(out) - 1; k >= 0 && out[k].Role == t.Role {
			parts[k] = append(parts[k], i)
			continue
		}
		out = append(out, t)
		parts = append(parts, []int{i})
	}
	for k, p := range parts {
		if len(p) > 1 {
			out[k].Text = strings.Join(partTexts(in, p), turnJoin)
		}
	}
	return out, parts
}

// partTexts are the texts of the turns of in that idx names (-1: the pad).
func partTexts(in []Turn, idx []int) []string {
	out := make([]string, len(idx))
	for j, i := range idx {
		if i < 0 {
			out[j] = padFirst
		} else {
			out[j] = in[i].Text
		}
	}
	return out
}

// turnJoin separates the turns of one role that Alternate merges.
const turnJoin = "\n\n"
