package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory/ops"
)

// contentSecurityPolicy allows scripts and styles from the console's own
// origin only: no inline script, no inline style, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// maxFormBytes bounds console request bodies; forms here are small.
const maxFormBytes = 64 << 10

// maxUploadBytes bounds a dictionary upload, the one large body.
const maxUploadBytes = ops.MaxDictionaryBytes + 1<<20

// secureHeaders sets the console's security headers.
func (c *Console) secureHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(ec echo.Context) error {
		h := ec.Response().Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), clipboard-write=(self)")
		if c.cfg.SecureCookies {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		if ec.Path() != staticRoute {
			// Pages can carry a key or an invitation link shown once.
			h.Set("Cache-Control", "no-store")
		}
		return next(ec)
	}
}

// boundBody bounds the request body, once the session is loaded: forms
// are small, and a dictionary file, the one large body, is taken only
// from a signed-in session. The CSRF check may read the body before
// authorization does, and a session cookie merely sent (any value) once
// opened the upload's limit to anyone.
func (c *Console) boundBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(ec echo.Context) error {
		if r := ec.Request(); r.Body != nil {
			limit := int64(maxFormBytes)
			if ec.Path() == dictUploadRoute && r.Method == http.MethodPost && sessionOf(ec) != nil {
				limit = maxUploadBytes
			}
			r.Body = http.MaxBytesReader(ec.Response(), r.Body, limit)
		}
		return next(ec)
	}
}
