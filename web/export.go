package web

import (
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory/importer"
)

// exportUser downloads a memory user's whole memory as the JSONL that
// `perpetuity import` reads. It is tenant-admin only (everything the user
// ever said leaves the service) and audited before the first byte. The
// body is streamed from one database snapshot; a failure after the download
// has started aborts the connection, so a browser never saves a cut-off
// file as if it were complete.
func (c *Console) exportUser(ec echo.Context, s *session) error {
	ctx := ec.Request().Context()
	id, err := strconv.ParseInt(ec.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return c.notFound(ec)
	}
	us, err := c.listUsers(ctx, s.TenantID, id)
	if err != nil {
		return c.internal(ec, err)
	}
	if len(us) != 1 {
		return c.notFound(ec)
	}
	if err := c.record(ctx, actor(ec, s, "memory.export", memoryUserTarget(id), map[string]any{"user_id": id, "user": us[0].Name, "as": s.Role})); err != nil {
		return c.internal(ec, err)
	}
	body := &download{ec: ec, filename: exportFilename(us[0].Name)}
	res, err := importer.Export(ctx, c.db, s.TenantID, id, body)
	if err != nil {
		if !body.started {
			return c.internal(ec, err)
		}
		c.log.Error("memory export failed mid-download", "err", err, "tenant_id", s.TenantID, "user_id", id)
		panic(http.ErrAbortHandler) // net/http's way to end a response as failed
	}
	body.start() // an empty memory is an empty file
	c.log.Info("memory exported", "tenant_id", s.TenantID, "user_id", id, "conversations", res.Conversations, "turns", res.Turns)
	return nil
}

// download sends the attachment headers with the first byte, so an error
// before it can still answer with an error page.
type download struct {
	ec       echo.Context
	filename string
	started  bool
}

func (d *download) start() {
	if d.started {
		return
	}
	d.started = true
	h := d.ec.Response().Header()
	h.Set(echo.HeaderContentType, "application/x-ndjson; charset=utf-8")
	h.Set(echo.HeaderContentDisposition, mime.FormatMediaType("attachment", map[string]string{"filename": d.filename}))
	d.ec.Response().WriteHeader(http.StatusOK)
}

func (d *download) Write(p []byte) (int, error) {
	d.start()
	return d.ec.Response().Write(p)
}

// exportFilename is "perpetuity-<user>.jsonl" with the name cut down to
// characters every file system and browser accepts.
func exportFilename(user string) string {
	var b strings.Builder
	for _, r := range user {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 80 {
			break
		}
	}
	name := strings.Trim(b.String(), "._")
	if name == "" {
		name = "user"
	}
	return "perpetuity-" + name + ".jsonl"
}
