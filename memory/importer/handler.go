package importer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory"
)

// errorBody is the JSON of a failed import: the line at fault (0 when the
// failure is not tied to a line) and what was stored before it.
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
// authenticates the caller and names the tenant and the default user (its
// errors are returned as they are, for the service's error handler). The
// whole body is checked before anything is stored: any bad line is a 400
// naming the line, and nothing is imported. The import runs detached from
// the client connection, so a hang-up does not stop it half-way through a
// conversation.
func (im *Importer) Handler(resolve func(c echo.Context) (memory.Who, error), maxBytes int64) echo.HandlerFunc {
	return func(c echo.Context) error {
		who, err := resolve(c)
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
			return fail(c, http.StatusBadRequest, fmt.Errorf("read body: %w", err), Result{})
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
			return fail(c, http.StatusBadRequest, err, Result{})
		}
		ctx := context.WithoutCancel(c.Request().Context())
		res, err := im.Import(ctx, who, bytes.NewReader(body), nil)
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

func fail(c echo.Context, status int, err error, res Result) error {
	var b errorBody
	b.Error.Message = err.Error()
	var le *LineError
	if errors.As(err, &le) {
		b.Error.Line = le.Line
	}
	b.Result = res
	return c.JSON(status, b)
}
