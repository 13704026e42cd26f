package harness

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Resources is what a server process holds that an attack could pin:
// goroutines (go_goroutines from its /metrics) and open files (the entries
// of /proc/<pid>/fd, sockets included).
type Resources struct{ Goroutines, FDs int }

// Sample reads the server's goroutines (on a connection of its own, closed
// after) and its open files.
func (s *Server) Sample(t testing.TB) Resources {
	t.Helper()
	g, err := Goroutines(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.PID()))
	if err != nil {
		t.Fatal(err)
	}
	return Resources{Goroutines: g, FDs: len(fds)}
}

// Goroutines is go_goroutines of the server at url.
func Goroutines(url string) (int, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20) // a label gone wild must not hide the line
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int(f), err
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("/metrics has no go_goroutines")
}

// Settle polls until goroutines and open files are back within slack of
// base, or timeout passes, and reports the last sample and whether it got
// there.
func (s *Server) Settle(t testing.TB, base Resources, slack int, timeout time.Duration) (Resources, bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		now := s.Sample(t)
		ok := now.Goroutines <= base.Goroutines+slack && now.FDs <= base.FDs+slack
		if ok || time.Now().After(deadline) {
			return now, ok
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// RSS reads the process's resident set size in bytes.
func RSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// PeakRSS samples the process's RSS every 5 ms until stop is closed.
func PeakRSS(pid int, stop <-chan struct{}) <-chan int64 {
	out := make(chan int64, 1)
	go func() {
		var peak int64
		tk := time.NewTicker(5 * time.Millisecond)
		defer tk.Stop()
		for {
			if v, err := RSS(pid); err == nil && v > peak {
				peak = v
			}
			select {
			case <-stop:
				out <- peak
				return
			case <-tk.C:
			}
		}
	}()
	return out
}
