package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The pass-through peer is the open-source Portkey gateway, pinned: the
// figures of two versions are not the same comparison.
const (
	PortkeyPackage = "@portkey-ai/gateway"
	PortkeyVersion = "1.15.2"
	portkeyScript  = "build/start-server.js"
)

// The gateway's HTTP server package, pinned below the range its manifest
// allows: from 1.14 on, a response built on an upstream's reply shares the
// upstream's immutable headers, and the gateway's streaming path, which
// adds its own headers to it, fails every stream with a 500 (Portkey's
// issue 1389). 1.13.8 is the last release before that.
const (
	honoServerPackage = "@hono/node-server"
	honoServerVersion = "1.13.8"
)

// Portkey's request headers that route a request to an OpenAI-compatible
// upstream of the caller's choosing (the fake provider): without a custom
// host it would call the real provider.
const (
	portkeyProviderHeader = "x-portkey-provider"
	portkeyHostHeader     = "x-portkey-custom-host"
)

// portkeyDir is where the pinned gateway is installed: the user's cache,
// outside the repository, one directory per version so a new pin never
// reuses an old install.
func portkeyDir() (string, error) {
	c, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(c, "perpetuity-bench", "portkey-"+PortkeyVersion+"-node-server-"+honoServerVersion), nil
}

// installPortkey returns the gateway's start script, installing the pinned
// version with npm unless an earlier run did (installed is false then). It
// installs into a fresh directory beside the cache and renames it into
// place, so an interrupted install is never taken for a finished one.
func installPortkey(ctx context.Context) (script string, installed bool, err error) {
	dir, err := portkeyDir()
	if err != nil {
		return "", false, fmt.Errorf("no cache directory: %w", err)
	}
	if portkeyInstalled(dir) {
		return portkeyStart(dir), false, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", false, errors.New("npm is not on PATH")
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", false, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".portkey-*")
	if err != nil {
		return "", false, err
	}
	defer os.RemoveAll(tmp) // nothing is left there once renamed
	ictx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	// A manifest of its own, for the override; npm installs what it names.
	manifest, _ := json.Marshal(map[string]any{
		"private":      true,
		"dependencies": map[string]string{PortkeyPackage: PortkeyVersion},
		"overrides":    map[string]string{honoServerPackage: honoServerVersion},
	})
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), manifest, 0o644); err != nil {
		return "", false, err
	}
	// --ignore-scripts: the package's postinstall runs patch-package on
	// patches it does not ship, which fails where npm runs scripts.
	cmd := exec.CommandContext(ictx, npm, "install", "--no-audit", "--no-fund", "--ignore-scripts",
		"--loglevel=error", "--prefix", tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", false, fmt.Errorf("npm install %s@%s: %v: %s", PortkeyPackage, PortkeyVersion, err, lastLines(out, 3))
	}
	if !portkeyInstalled(tmp) {
		return "", false, fmt.Errorf("npm install %s@%s left no %s of that version (or no %s@%s)", PortkeyPackage, PortkeyVersion,
			portkeyScript, honoServerPackage, honoServerVersion)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if portkeyInstalled(dir) { // another run got there first
			return portkeyStart(dir), false, nil
		}
		if rerr := os.RemoveAll(dir); rerr != nil {
			return "", false, err
		}
		if err := os.Rename(tmp, dir); err != nil {
			return "", false, err
		}
	}
	return portkeyStart(dir), true, nil
}

func portkeyStart(dir string) string {
	return filepath.Join(dir, "node_modules", filepath.FromSlash(PortkeyPackage), filepath.FromSlash(portkeyScript))
}

// portkeyInstalled reports whether dir holds the pinned versions whole,
// and no other copy of the server package the gateway could load instead.
func portkeyInstalled(dir string) bool {
	mod := filepath.Join(dir, "node_modules")
	if !hasPackage(mod, PortkeyPackage, PortkeyVersion) || !hasPackage(mod, honoServerPackage, honoServerVersion) {
		return false
	}
	if _, err := os.Stat(filepath.Join(mod, filepath.FromSlash(PortkeyPackage), "node_modules", filepath.FromSlash(honoServerPackage))); err == nil {
		return false
	}
	_, err := os.Stat(portkeyStart(dir))
	return err == nil
}

func hasPackage(modules, name, version string) bool {
	b, err := os.ReadFile(filepath.Join(modules, filepath.FromSlash(name), "package.json"))
	if err != nil {
		return false
	}
	var pj struct{ Name, Version string }
	return json.Unmarshal(b, &pj) == nil && pj.Name == name && pj.Version == version
}

// portkey is a running gateway.
type portkey struct {
	cmd  *exec.Cmd
	base string
	node string // node --version
	out  *tailBuffer
	done chan struct{} // closed when the process has exited
	werr error         // its exit, once done is closed
	// client is the bench's client with an idle timeout under Node's
	// keep-alive timeout (5 s), so no request goes out on a connection the
	// gateway is closing between rounds.
	client *http.Client
}

// startPortkey runs the gateway with Node on a free port and waits until
// it answers. --headless leaves out its web console and the live log
// stream the console reads; its output (a banner at start, nothing per
// request) goes to a small buffer kept for the error message.
func startPortkey(ctx context.Context, script string) (*portkey, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, errors.New("node is not on PATH")
	}
	ver, err := exec.CommandContext(ctx, node, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("node --version: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	// The gateway takes no address to listen on: it listens on every
	// interface, for the length of section 1.
	cmd := exec.Command(node, script, "--port="+strconv.Itoa(port), "--headless")
	out := &tailBuffer{max: 4 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = peerProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start node: %w", err)
	}
	client := newClient(128)
	client.Transport.(*http.Transport).IdleConnTimeout = 4 * time.Second
	p := &portkey{cmd: cmd, base: "http://127.0.0.1:" + strconv.Itoa(port), node: strings.TrimSpace(string(ver)),
		out: out, done: make(chan struct{}), client: client}
	go func() {
		p.werr = cmd.Wait()
		close(p.done)
	}()
	if err := p.ready(ctx, 30*time.Second); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// ready polls the gateway's root, which answers once it listens.
func (p *portkey) ready(ctx context.Context, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for {
		select {
		case <-p.done:
			return fmt.Errorf("the gateway exited (%v): %s", p.werr, p.out.lastLines(3))
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/", nil)
		if resp, err := p.client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the gateway did not answer within %s: %s", bound, p.out.lastLines(3))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// endpoint is the chat endpoint through the gateway, forwarding to
// upstream (scheme://host of the fake provider).
func (p *portkey) endpoint(upstream string) Endpoint {
	h := chatHeader()
	h.Set(portkeyProviderHeader, "openai")
	h.Set(portkeyHostHeader, upstream+"/v1")
	return Endpoint{URL: p.base + "/v1/chat/completions", Header: h}
}

func (p *portkey) close() {
	p.client.CloseIdleConnections()
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) lastLines(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return lastLines(t.b, n)
}

// lastLines is the last n non-empty lines of b, joined by " / ", without
// terminal escapes (the gateway's banner is coloured).
func lastLines(b []byte, n int) string {
	var lines []string
	for _, l := range bytes.Split(b, []byte("\n")) {
		if s := strings.TrimSpace(stripEscapes(string(l))); s != "" {
			lines = append(lines, s)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 0 {
		return "no output"
	}
	return strings.Join(lines, " / ")
}

func stripEscapes(s string) string {
	var out strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[':
			i += 2
			for i < len(s) && (s[i] < '@' || s[i] > '~') {
				i++
			}
		case s[i] == '\r':
			out.WriteByte(' ')
		default:
			out.WriteByte(s[i])
		}
	}
	return out.String()
}
