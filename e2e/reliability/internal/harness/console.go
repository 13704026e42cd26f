package harness

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/PuerkitoBio/goquery"
)

// ConsoleAnswer is one console response, with the CSRF token its page
// carries ("" when it carries none).
type ConsoleAnswer struct {
	Status int
	Header http.Header
	Body   []byte
	CSRF   string
}

// ConsoleDo sends one console request as a browser would: form-encoded
// when form is not nil (the caller sets its _csrf), through client (whose
// cookie jar holds the session), and reads the page's CSRF token for the
// next form.
func ConsoleDo(ctx context.Context, client *http.Client, method, target string, form url.Values) (ConsoleAnswer, error) {
	var rd io.Reader
	if form != nil {
		rd = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return ConsoleAnswer{}, err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := client.Do(req)
	if err != nil {
		return ConsoleAnswer{}, fmt.Errorf("console %s %s: %w", method, target, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return ConsoleAnswer{}, fmt.Errorf("read console %s %s: %w", method, target, err)
	}
	a := ConsoleAnswer{Status: resp.StatusCode, Header: resp.Header, Body: b}
	if doc, err := goquery.NewDocumentFromReader(bytes.NewReader(b)); err == nil {
		a.CSRF, _ = doc.Find(`input[name="_csrf"]`).First().Attr("value")
	}
	return a, nil
}
