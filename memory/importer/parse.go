// Package importer loads existing conversation history into memory through
// the same capture code the proxy uses, keeping each turn's original time and
// speaker name.
//
// # Format
//
// The input is JSON Lines (UTF-8): one conversation per line, blank lines
// ignored.
//
//	{"conversation": "trip-2023", "title": "Planning the trip", "user": "caroline",
//	 "turns": [
//	   {"role": "user", "speaker": "Caroline", "text": "Hey Mel!", "at": "2023-05-08T13:56:00Z"},
//	   {"role": "assistant", "speaker": "Melanie", "text": "Hi!", "at": "2023-05-08T13:57:00Z"}]}
//
// Fields of a line:
//   - conversation (required): the conversation's external id, at most 200
//     bytes. It is the same name space as the X-Perpetuity-Conversation
//     header, so a harness sending that header with this id continues the
//     imported conversation. An id may appear on one line per user only.
//   - title (optional): shown in the console; defaults to the first line of
//     the first user turn.
//   - user (optional): the memory user the conversation belongs to, created
//     on first sight. Defaults to the importing key's user (HTTP) or --user
//     (command line); one of them must name a user.
//   - turns (required, at least one), in order. Each turn has role ("user" or
//     "assistant", required), text (required, not blank), at (required, RFC
//     3339 time such as 2023-05-08T13:56:00Z or with an offset; it is the time
//     frames label the turn with) and speaker (optional display name; when
//     empty the frame names the user or the assistant).
//
// Unknown fields are errors, so a misspelt field is never silently dropped.
// A turn's position in its conversation is its index in turns.
//
// # Guarantees
//
// Every line is checked before anything is captured: a file or request body
// with any bad line imports nothing and the error names the line. Each turn
// is captured as one message, whole or not at all. A database failure in the
// middle of a line can leave that line's earlier turns stored; importing the
// same input again is idempotent, because a message with the same role,
// position and text in the same conversation is recognised and counted as a
// duplicate, not stored twice.
package importer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits on untrusted input.
const (
	// MaxLineBytes is the longest accepted line (one whole conversation).
	MaxLineBytes = 32 << 20
	// MaxNameBytes bounds conversation ids, user and speaker names; it is the
	// limit the schema and the proxy's headers use.
	MaxNameBytes = 200
	// MaxTitleBytes bounds titles.
	MaxTitleBytes = 1000
)

// Conversation is one line of the input.
type Conversation struct {
	ID    string `json:"conversation"`
	Title string `json:"title,omitempty"`
	User  string `json:"user,omitempty"`
	Turns []Turn `json:"turns"`
}

// Turn is one message of a conversation.
type Turn struct {
	Role    string    `json:"role"`
	Speaker string    `json:"speaker,omitempty"`
	Text    string    `json:"text"`
	At      time.Time `json:"at"`
}

// wireTurn keeps at as a string so a bad time gets our message, not
// encoding/json's.
type wireTurn struct {
	Role    string `json:"role"`
	Speaker string `json:"speaker"`
	Text    string `json:"text"`
	At      string `json:"at"`
}

type wireConversation struct {
	ID    string     `json:"conversation"`
	Title string     `json:"title"`
	User  string     `json:"user"`
	Turns []wireTurn `json:"turns"`
}

// LineError is bad input on one line (1-based).
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// Parse reads the JSONL format line by line, checks each line whole and
// calls fn with every good conversation. It stops at the first bad line with
// a *LineError, or at the first error of fn, which comes back wrapped with
// its line number.
func Parse(r io.Reader, fn func(lineNo int, c Conversation) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	seen := map[[2]string]int{}
	for lineNo := 1; ; lineNo++ {
		line, err := readLine(br)
		if err != nil && !errors.Is(err, io.EOF) {
			if errors.Is(err, errLineTooLong) {
				return &LineError{Line: lineNo, Err: err}
			}
			return fmt.Errorf("line %d: read: %w", lineNo, err)
		}
		if len(bytes.TrimSpace(line)) > 0 {
			c, perr := parseLine(line)
			if perr != nil {
				return &LineError{Line: lineNo, Err: perr}
			}
			k := [2]string{c.User, c.ID}
			if prev, dup := seen[k]; dup {
				return &LineError{Line: lineNo, Err: fmt.Errorf("conversation %q already appeared on line %d (one line per conversation)", c.ID, prev)}
			}
			seen[k] = lineNo
			if fn != nil {
				if ferr := fn(lineNo, c); ferr != nil {
					return fmt.Errorf("line %d: %w", lineNo, ferr)
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

var errLineTooLong = fmt.Errorf("longer than %d bytes", MaxLineBytes)

// readLine returns the next line without its terminator; io.EOF comes with
// the last (possibly empty) line.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > MaxLineBytes+2 {
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) > MaxLineBytes {
			return nil, errLineTooLong
		}
		return line, err
	}
}

func parseLine(line []byte) (Conversation, error) {
	line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")) // a BOM some editors write
	if !utf8.Valid(line) {
		return Conversation{}, errors.New("not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var w *wireConversation
	if err := dec.Decode(&w); err != nil {
		return Conversation{}, jsonError(err)
	}
	if dec.More() {
		return Conversation{}, errors.New("more than one JSON value on the line (one conversation per line)")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Conversation{}, errors.New("unexpected data after the conversation object")
	}
	if w == nil {
		return Conversation{}, errors.New("want a conversation object, got null")
	}
	return check(*w)
}

func check(w wireConversation) (Conversation, error) {
	c := Conversation{ID: strings.TrimSpace(w.ID), Title: strings.TrimSpace(w.Title), User: strings.TrimSpace(w.User)}
	if c.ID == "" {
		return c, errors.New(`conversation: required (the conversation's external id)`)
	}
	for _, f := range []struct {
		name, val string
		max       int
	}{{"conversation", c.ID, MaxNameBytes}, {"user", c.User, MaxNameBytes}, {"title", c.Title, MaxTitleBytes}} {
		if err := checkString(f.name, f.val, f.max); err != nil {
			return c, err
		}
	}
	if len(w.Turns) == 0 {
		return c, errors.New("turns: required, at least one turn")
	}
	c.Turns = make([]Turn, len(w.Turns))
	for i, t := range w.Turns {
		at := fmt.Sprintf("turns[%d]", i)
		if t.Role != "user" && t.Role != "assistant" {
			return c, fmt.Errorf(`%s.role: %q is not "user" or "assistant"`, at, t.Role)
		}
		if strings.TrimSpace(t.Text) == "" {
			return c, fmt.Errorf("%s.text: required, not blank", at)
		}
		if strings.IndexByte(t.Text, 0) >= 0 {
			return c, fmt.Errorf("%s.text: contains a NUL character", at)
		}
		speaker := strings.TrimSpace(t.Speaker)
		if err := checkString(at+".speaker", speaker, MaxNameBytes); err != nil {
			return c, err
		}
		if strings.TrimSpace(t.At) == "" {
			return c, fmt.Errorf("%s.at: required (RFC 3339 time such as 2023-05-08T13:56:00Z)", at)
		}
		ts, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(t.At))
		if err != nil || ts.IsZero() {
			return c, fmt.Errorf("%s.at: %q is not an RFC 3339 time such as 2023-05-08T13:56:00Z", at, t.At)
		}
		c.Turns[i] = Turn{Role: t.Role, Speaker: speaker, Text: t.Text, At: ts}
	}
	return c, nil
}

func checkString(name, v string, max int) error {
	if len(v) > max {
		return fmt.Errorf("%s: longer than %d bytes", name, max)
	}
	if strings.IndexByte(v, 0) >= 0 {
		return fmt.Errorf("%s: contains a NUL character", name)
	}
	return nil
}

// jsonError rewords encoding/json's errors for people writing import files.
func jsonError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("not valid JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			return fmt.Errorf("want a conversation object, got JSON %s", te.Value)
		}
		return fmt.Errorf("%s: wrong type (JSON %s)", field, te.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errors.New("not valid JSON: the line ends inside a value")
	}
	return errors.New(strings.TrimPrefix(err.Error(), "json: "))
}
