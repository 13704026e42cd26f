package importer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory"
)

// errorBody is the JSON of a failed import: the line at fault, or for an
// import that stopped early the line to resume from (0 when the failure is
// not tied to a line), and what was stored before it.
type errorBody struct {
	Error struct {
		Message string `json:"message"`
		Line    int    `json:"line,omitempty"`
	} `json:"error"`
	Result
}

// Handler serves POST .../perpetuity/import. The body is the JSONL format,
// or ChatGPT's conversations.json: the format query parameter says which
// ("jsonl" or "chatgpt"); without it a body whose first non-blank byte is
// '[' is ChatGPT's (a JSONL line is an object, never an array). The answer
// is {"conversations": n, "turns": n, "duplicates": n}, plus "skipped" (the
// ChatGPT conversations without any text) for ChatGPT's format. resolve
// authenticates and admits the caller under its key's limits, and names
// the tenant, the default user and the key's token budget (its errors are
// returned as they are, for the service's error handler). The whole body
// is checked before anything is stored: any bad line is a 400 naming the
// line, and nothing is imported. Lines are stored one after another, each
// whole: when the budget runs out the import stops before the next line
// with a 429 and Retry-After; when the client leaves it stops there too.
// Either way the answer (and, for a client that left, the log) names the
// line to resume from and what was stored.
func (im *Importer) Handler(resolve func(c echo.Context) (memory.Who, Budget, error), maxBytes int64, log *slog.Logger) echo.HandlerFunc {
	return func(c echo.Context) error {
		who, budget, err := resolve(c)
		if err != nil {
			return err
		}
		format := c.QueryParam("format")
		if format != "" && format != FormatJSONL && format != FormatChatGPT {
			return fail(c, http.StatusBadRequest, fmt.Errorf("format %q is not supported (jsonl, chatgpt)", format), Result{})
		}
		body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, maxBytes))
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return fail(c, http.StatusRequestEntityTooLarge, fmt.Errorf("body exceeds %d bytes; split the file, or import it with `perpetuity import`", maxBytes), Result{})
		}
		if err != nil {
			// The server's body deadline and body budget say which status
			// their refusal is (408, 503 to retry); any other failure to
			// read is the client's.
			status := http.StatusBadRequest
			var st interface{ StatusCode() int }
			if errors.As(err, &st) {
				status = st.StatusCode()
			}
			if status == http.StatusServiceUnavailable {
				c.Response().Header().Set("Retry-After", "1")
			}
			return fail(c, status, fmt.Errorf("read body: %w", err), Result{})
		}
		if format == "" {
			format = sniffFormat(body)
		}
		var skipped *int
		if format == FormatChatGPT {
			var jsonl bytes.Buffer
			st, err := ChatGPTToJSONL(bytes.NewReader(body), &jsonl)
			if err != nil {
				return fail(c, http.StatusBadRequest, err, Result{})
			}
			body, skipped = jsonl.Bytes(), &st.Skipped
		}
		if err := Check(bytes.NewReader(body), who); err != nil {
			status := http.StatusBadRequest
			if errors.Is(err, ErrPinnedUser) {
				status = http.StatusForbidden
			}
			return fail(c, status, err, Result{})
		}
		res, err := im.ImportWithin(c.Request().Context(), who, bytes.NewReader(body), budget, nil)
		var st *Stopped
		if errors.As(err, &st) {
			return stopped(c, log, who, st, res)
		}
		if err != nil {
			return fail(c, failStatus(err), err, res)
		}
		return c.JSON(http.StatusOK, imported{Result: res, Skipped: skipped})
	}
}

// Formats the import reads.
const (
	FormatJSONL   = "jsonl"
	FormatChatGPT = "chatgpt"
)

// imported is a successful import's answer.
type imported struct {
	Result
	Skipped *int `json:"skipped,omitempty"` // ChatGPT conversations without text
}

// sniffFormat names the format of a body that did not say: an array is
// ChatGPT's export, anything else is read as JSONL (and its errors name
// lines).
func sniffFormat(body []byte) string {
	if t := bytes.TrimLeft(body, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '[' {
		return FormatChatGPT
	}
	return FormatJSONL
}

// statusClientClosed is what the log records for an import whose client
// left (nginx's 499: nobody reads the answer).
const statusClientClosed = 499

// stopped answers an import that ended at a line boundary, and logs it by
// line: a spent budget is a 429 with Retry-After, a client that left gets
// an answer nobody reads.
func stopped(c echo.Context, log *slog.Logger, who memory.Who, st *Stopped, res Result) error {
	reason, status := "client left", statusClientClosed
	if st.Limited {
		reason, status = "rate limited", http.StatusTooManyRequests
		c.Response().Header().Set("Retry-After", strconv.FormatInt(max(1, int64(math.Ceil(st.RetryAfter.Seconds()))), 10))
	}
	log.Info("import stopped", "request_id", c.Get("perpetuity.request_id"), "reason", reason, "tenant", who.TenantID,
		"line", st.Line, "conversations", res.Conversations, "turns", res.Turns, "duplicates", res.Duplicates, "err", st.Err.Error())
	return fail(c, status, st, res)
}

func fail(c echo.Context, status int, err error, res Result) error {
	var b errorBody
	b.Error.Message = err.Error()
	var le *LineError
	var st *Stopped
	switch {
	case errors.As(err, &le):
		b.Error.Line = le.Line
	case errors.As(err, &st):
		b.Error.Line = st.Line
	}
	b.Result = res
	return c.JSON(status, b)
}
