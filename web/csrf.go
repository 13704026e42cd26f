package web

import (
	"crypto/subtle"
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
