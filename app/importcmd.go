package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/importer"
	"github.com/perpetuity/perpetuity/proxy"
)

const importUsage = "import --tenant ID [--user NAME] [--format jsonl|chatgpt] [--json] FILE   (FILE in the JSONL format of the README, or ChatGPT's conversations.json; - reads stdin)"

// runImport is `perpetuity import`: it loads conversation history into a
// tenant through the capture path. The whole file is checked first, so a
// file with a bad line imports nothing.
func runImport(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "import", importUsage)
	tenant := fs.Int64("tenant", 0, "id of the tenant to import into (required)")
	user := fs.String("user", "", `memory user of lines without a "user" field (created if new)`)
	format := fs.String("format", importer.FormatJSONL, "input format: jsonl, or chatgpt (conversations.json of ChatGPT's data export)")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 || *tenant <= 0 {
		fs.Usage()
		return UsageError{"usage: perpetuity " + importUsage}
	}
	if err := checkUserFlag("--user", *user); err != nil {
		return err
	}
	if *format != importer.FormatJSONL && *format != importer.FormatChatGPT {
		fs.Usage()
		return UsageError{fmt.Sprintf("import: --format %q is not supported (jsonl, chatgpt)", *format)}
	}
	name := fs.Arg(0)
	open, closeFile, err := reopenable(e, name)
	if err != nil {
		return err
	}
	defer closeFile()
	if *format == importer.FormatChatGPT {
		if open, err = fromChatGPT(e, open); err != nil {
			return fmt.Errorf("%s: %w (nothing was imported)", name, err)
		}
	}

	who := memory.Who{TenantID: *tenant, UserName: *user}
	r, err := open()
	if err != nil {
		return err
	}
	if err := importer.Check(r, who); err != nil {
		return fmt.Errorf("%s: %w (nothing was imported)", name, err)
	}

	cfg, db, err := openStore(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	eng, err := newEngine(ctx, cfg, db)
	if err != nil {
		return err
	}
	if r, err = open(); err != nil {
		return err
	}
	bar := newImportProgress(e.stderr)
	res, err := importer.New(db, eng, importer.CaptureTimeout(cfg.CaptureTimeout)).Import(ctx, who, r, bar.update)
	bar.done()
	if err != nil {
		return fmt.Errorf("%s: %w (imported before it: %d conversations, %d turns; importing the file again skips what is stored)",
			name, err, res.Conversations, res.Turns)
	}
	if *asJSON {
		return json.NewEncoder(e.stdout).Encode(struct {
			TenantID int64  `json:"tenant_id"`
			Format   string `json:"format"`
			importer.Result
		}{*tenant, *format, res})
	}
	fmt.Fprintf(e.stdout, "imported %d conversations into tenant %d: %d turns stored, %d already present\n",
		res.Conversations, *tenant, res.Turns, res.Duplicates)
	return nil
}

// reopenable gives the input twice (check, then import): a file is
// rewound, stdin is read into memory once.
func reopenable(e env, name string) (open func() (io.Reader, error), closeFn func(), err error) {
	if name == "-" {
		b, err := io.ReadAll(e.stdin)
		if err != nil {
			return nil, nil, fmt.Errorf("read stdin: %w", err)
		}
		return func() (io.Reader, error) { return bytes.NewReader(b), nil }, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	return func() (io.Reader, error) {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return f, nil
	}, func() { f.Close() }, nil
}

// fromChatGPT converts ChatGPT's export to JSONL once, in memory (it is
// a fraction of conversations.json), so checking and importing below read
// one format.
func fromChatGPT(e env, open func() (io.Reader, error)) (func() (io.Reader, error), error) {
	r, err := open()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	st, err := importer.ChatGPTToJSONL(r, &buf)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(e.stderr, "chatgpt: %d conversations with %d turns to import, %d without text skipped\n", st.Conversations, st.Turns, st.Skipped)
	b := buf.Bytes()
	return func() (io.Reader, error) { return bytes.NewReader(b), nil }, nil
}

// mountImport serves the import endpoint beside the proxy routes: the key
// in the path like the proxy URL, or in X-Perpetuity-Key, admitted under
// the key's limits like a proxied call.
func mountImport(ec *echo.Echo, im *importer.Importer, px *proxy.Proxy, maxBytes int64, log *slog.Logger) {
	h := im.Handler(func(c echo.Context) (memory.Who, importer.Budget, error) {
		who, budget, err := px.IdentifyImport(c)
		if err != nil {
			return who, nil, err
		}
		return who, budget, nil
	}, maxBytes, log)
	ec.POST("/k/:key/perpetuity/import", h)
	ec.POST("/perpetuity/import", h)
}

// importProgress is the import's one-line progress on stderr.
type importProgress struct {
	w     io.Writer
	mu    sync.Mutex
	last  time.Time
	wrote bool
}

func newImportProgress(w io.Writer) *importProgress { return &importProgress{w: progressOut(w)} }

func (p *importProgress) update(line int, r importer.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.last) < 200*time.Millisecond {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.w, "\rimport: line %d, %d conversations, %d turns stored, %d already present", line, r.Conversations, r.Turns, r.Duplicates)
	p.wrote = true
}

func (p *importProgress) done() {
	if p.wrote {
		fmt.Fprintln(p.w)
	}
}
