package proxy

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/perpetuity/perpetuity/memory/store"
)

// scopeAllows applies the key's scope (issue 15, item 114) before a memory
// user is chosen, and returns the user-field hint chooseUser may use.
//
// A pinned key may act only as its own user: X-Perpetuity-User naming
// anyone else is refused with a permission error, since a header is set on
// purpose and a silent fallback would answer from the wrong memory. The API
// user field is different: harnesses fill it in on their own (session ids,
// device ids), so for a pinned key it is dropped and the request runs as
// the key's user, never refused. A tenant-wide key may name anyone.
func scopeAllows(k store.KeyIdentity, header, hint string) (string, error) {
	if !k.Pinned() {
		return hint, nil
	}
	if name := strings.TrimSpace(header); name != "" && name != k.UserName {
		return "", errPinned(k)
	}
	return "", nil
}

// errPinned names the key's own user (the caller holds the key, so it is
// theirs to know) and not the one asked for, which is the caller's own
// input and may be anything.
func errPinned(k store.KeyIdentity) *APIError {
	return &APIError{Status: http.StatusForbidden, Kind: Permission,
		Message: "this Perpetuity key is pinned to memory user " + strconv.Quote(k.UserName) + ": " + HeaderUser +
			" may only repeat it; a tenant-wide key (made by a tenant admin) may name other users"}
}
