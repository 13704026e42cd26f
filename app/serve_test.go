package app

import (
	"net/http"
	"testing"

	"github.com/perpetuity/perpetuity/proxy"
)

// An HTTP error on a proxy route is told to the client in its dialect with
// the kind translate's status table gives the status.
func TestKindFor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status int
		want   proxy.ErrorKind
	}{
		{http.StatusBadRequest, proxy.InvalidRequest},
		{http.StatusUnauthorized, proxy.Authentication},
		{http.StatusPaymentRequired, proxy.InvalidRequest},
		{http.StatusForbidden, proxy.Permission},
		{http.StatusNotFound, proxy.NotFound},
		{http.StatusMethodNotAllowed, proxy.InvalidRequest},
		{http.StatusRequestTimeout, proxy.InvalidRequest},
		{http.StatusRequestEntityTooLarge, proxy.RequestTooLarge},
		{http.StatusTooManyRequests, proxy.RateLimited},
		{http.StatusInternalServerError, proxy.Internal},
		{http.StatusBadGateway, proxy.Internal},
		{http.StatusServiceUnavailable, proxy.Overloaded},
		{http.StatusGatewayTimeout, proxy.Internal},
		{529, proxy.Overloaded},
	}
	for _, c := range cases {
		if got := kindFor(c.status); got != c.want {
			t.Errorf("kindFor(%d) = %v, want %v", c.status, got, c.want)
		}
	}
}
