package web

import (
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/labstack/echo/v4"
)

// staticFiles are the console's script and style, served from the binary
// (htmx is vendored: web/static/htmx.min.js, from the htmx.org npm package).
//
//go:embed static
var staticFiles embed.FS

// static serves one embedded file; directories are not listed.
func (c *Console) static(ec echo.Context) error {
	name := ec.Param("*")
	if name == "" || strings.Contains(name, "..") || strings.HasSuffix(name, "/") {
		return c.notFound(ec)
	}
	b, err := fs.ReadFile(staticFiles, path.Join("static", name))
	if err != nil {
		return c.notFound(ec)
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	ec.Response().Header().Set("Cache-Control", "public, max-age=3600")
	return ec.Blob(http.StatusOK, ct, b)
}
