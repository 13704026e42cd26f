package app

import (
	"fmt"
	"net"
	"strings"

	"github.com/labstack/echo/v4"
)

// parseTrustedProxies reads PERPETUITY_TRUSTED_PROXIES: comma-separated
// CIDRs (a bare address means just that address) of the load balancers
// whose X-Forwarded-For the service believes.
func parseTrustedProxies(s string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if !strings.Contains(part, "/") {
			ip := net.ParseIP(part)
			if ip == nil {
				return nil, fmt.Errorf("%q is neither a CIDR (10.0.0.0/8) nor an IP address", part)
			}
			bits := 128
			if ip.To4() != nil {
				ip, bits = ip.To4(), 32
			}
			out = append(out, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
			continue
		}
		_, n, err := net.ParseCIDR(part)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR such as 10.0.0.0/8", part)
		}
		out = append(out, n)
	}
	return out, nil
}

// ipExtractor is how the service tells a client's address (sign-in and
// sign-up throttling, audit entries). With no trusted proxy it is the
// socket's peer and forwarded headers are ignored, since anyone can send
// them. With trusted ranges, X-Forwarded-For is read from the right: the
// first address that is not a trusted proxy is the client. Echo's own
// defaults (trusting loopback, link-local and private networks) are turned
// off, so only what the operator listed is believed.
func ipExtractor(trusted []*net.IPNet) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, n := range trusted {
		opts = append(opts, echo.TrustIPRange(n))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}
