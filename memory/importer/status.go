package importer

import (
	"errors"
	"net/http"

	"github.com/perpetuity/perpetuity/memory/store"
)

// failStatus is the status of an import that stopped part-way: a bad line
// is the caller's (400); a line naming a new memory user past the key's new
// users of the day is a 429, as on the proxy routes (issue 15, finding 12);
// anything else is the service's (500).
func failStatus(err error) int {
	var le *LineError
	switch {
	case errors.Is(err, store.ErrUserQuota):
		return http.StatusTooManyRequests
	case errors.As(err, &le):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}
