package proxy

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestBodyNotReadBeforeKey: a caller without a valid key, or with a body it
// says is too large, is answered from the headers alone. The server must
// not wait for (and hold) a body it will refuse: a request that sends its
// headers and then trickles or withholds the body gets its answer at once.
func TestBodyNotReadBeforeKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, key string
		length    int
		want      int
	}{
		{"no such key", "ppk_nope", 512 << 10, http.StatusUnauthorized},
		{"valid key, declared too large", testKey, 2 << 20, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tp := newTestProxy(t)
			host := strings.TrimPrefix(strings.SplitN(tp.URL, "/k/", 2)[0], "http://")
			conn, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// Headers and the body's first bytes; the rest never comes.
			fmt.Fprintf(conn, "POST /k/%s/v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
				"Authorization: Bearer sk-proj-k\r\nContent-Length: %d\r\n\r\n{\"model\":", tc.key, host, tc.length)
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer while the body is withheld: %v", err)
			}
			defer res.Body.Close()
			if res.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", res.StatusCode, tc.want)
			}
		})
	}
}
