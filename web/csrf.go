package web

import (
	"crypto/subtle"
	"errors"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"
)

const (
	ctxCSRF        = "perpetuity.console.csrf"
	csrfFormField  = "_csrf"
	csrfHeaderName = "X-CSRF-Token"
)

// csrf guards every state-changing console request with a synchronizer
// token: the session's own when signed in, otherwise a random token held in
// a Strict, HttpOnly cookie (double submit) so sign-up and sign-in forms
// cannot be driven from another site either. Cross-site requests, as the
// browser reports them in Sec-Fetch-Site, are refused outright.
func (c *Console) csrf(next echo.HandlerFunc) echo.HandlerFunc {
	return func(ec echo.Context) error {
		if ec.Path() == staticRoute {
			return next(ec)
		}
		token := ""
		if s := sessionOf(ec); s != nil {
			token = s.CSRF
		} else if ck, err := ec.Cookie(c.csrfCookie); err == nil {
			if _, ok := hashToken(ck.Value); ok {
				token = ck.Value
			}
		}
		if token == "" {
			t, err := newToken()
			if err != nil {
				return c.fail(ec, http.StatusInternalServerError, "Something went wrong.")
			}
			token = t
			ec.SetCookie(&http.Cookie{
				Name: c.csrfCookie, Value: token, Path: "/", HttpOnly: true,
				Secure: c.cfg.SecureCookies, SameSite: http.SameSiteStrictMode,
			})
		}
		switch ec.Request().Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			if ec.Request().Header.Get("Sec-Fetch-Site") == "cross-site" {
				return c.fail(ec, http.StatusForbidden, "Cross-site requests are refused.")
			}
			got := ec.Request().Header.Get(csrfHeaderName)
			if got == "" {
				if err := parseForm(ec.Request()); err != nil {
					return c.formUnread(ec, err)
				}
				got = ec.FormValue(csrfFormField)
			}
			if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				return c.fail(ec, http.StatusForbidden, "This form has expired. Go back, reload the page and try again.")
			}
		}
		ec.Set(ctxCSRF, token)
		return next(ec)
	}
}

func csrfOf(ec echo.Context) string {
	t, _ := ec.Get(ctxCSRF).(string)
	return t
}

// formMemory is what a multipart form keeps in memory before spilling to
// temporary files: net/http's default, which echo's FormValue and FormFile
// use, so parsing here changes nothing for the handlers after it.
const formMemory = 32 << 20

// parseForm reads the request's form, as FormValue would, and returns the
// error reading its body gave, which FormValue drops: a body the server
// stopped reading is not a form without a token. A form that was read but
// parses badly (a stray % in the query) goes on as before: its token, if
// it has one, decides.
func parseForm(r *http.Request) error {
	body := &bodyErr{ReadCloser: r.Body}
	r.Body = body
	_ = r.ParseMultipartForm(formMemory)
	return body.err
}

// bodyErr remembers the first error reading the body gave, other than its
// end.
type bodyErr struct {
	io.ReadCloser
	err error
}

func (b *bodyErr) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}

// formUnread answers a form whose body could not be read. Reported as an
// expired form (as it was), a form refused because the process was taking
// in too many bodies at once had the user reload and resend into the same
// refusal, with no word that waiting a moment would do. The body's reader
// says which refusal it was (app's body deadline and budget carry the
// status); the connection is closed, the body being unread.
func (c *Console) formUnread(ec echo.Context, err error) error {
	ec.Response().Header().Set("Connection", "close")
	var mbe *http.MaxBytesError
	var st interface{ StatusCode() int }
	switch {
	case errors.As(err, &mbe):
		return c.fail(ec, http.StatusRequestEntityTooLarge, "This form is larger than the console takes.")
	case errors.As(err, &st) && st.StatusCode() == http.StatusServiceUnavailable:
		ec.Response().Header().Set("Retry-After", "1")
		return c.fail(ec, http.StatusServiceUnavailable, "The server is busy taking in other requests. Wait a moment and send the form again.")
	case errors.As(err, &st) && st.StatusCode() == http.StatusRequestTimeout:
		return c.fail(ec, http.StatusRequestTimeout, "The form took too long to arrive. Send it again.")
	}
	return c.fail(ec, http.StatusBadRequest, "The form could not be read. Send it again.")
}
