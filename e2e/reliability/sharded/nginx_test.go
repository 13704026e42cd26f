package sharded

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nginxBinary finds Debian's nginx, installing nginx-light when it is
// missing and the test may (root with apt-get, as `make deps` does). It
// skips, saying why, only when nginx still cannot be had: the balancer is
// the point of the test, and a stand-in would test something else.
func nginxBinary(t *testing.T) string {
	t.Helper()
	find := func() string {
		if p, err := exec.LookPath("nginx"); err == nil {
			return p
		}
		if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
			return "/usr/sbin/nginx"
		}
		return ""
	}
	if p := find(); p != "" {
		return p
	}
	apt, err := exec.LookPath("apt-get")
	if os.Geteuid() != 0 || err != nil {
		t.Skip("nginx is not installed and this test cannot install it (needs root and apt-get): apt-get install nginx-light")
	}
	install := func() ([]byte, error) {
		cmd := exec.Command(apt, "install", "-y", "-qq", "nginx-light")
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		return cmd.CombinedOutput()
	}
	out, err := install()
	if err != nil { // a fresh machine may have no package lists yet
		if upd, uerr := exec.Command(apt, "update", "-qq").CombinedOutput(); uerr != nil {
			t.Skipf("nginx is not installed and apt-get update failed: %v\n%s", uerr, upd)
		}
		out, err = install()
	}
	if p := find(); p != "" {
		return p
	}
	t.Skipf("nginx is not installed and apt-get install nginx-light failed: %v\n%s", err, out)
	return ""
}

// templatePath is the committed balancer configuration.
func templatePath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "deploy", "nginx", "perpetuity.conf")
}

var (
	serverLine = regexp.MustCompile(`(?m)^(\s*server\s+)perpetuity-shard-(\d+):8080(\s)`)
	listenLine = regexp.MustCompile(`(?m)^(\s*listen\s+)8080;`)
	accessLine = regexp.MustCompile(`/var/log/nginx/perpetuity\.log`)
	errorLine  = regexp.MustCompile(`/var/log/nginx/error\.log`)
)

// renderConfig is the committed template with the test's ports filled in
// (shard k at ports[k-1], the listener at listen) and its paths under dir,
// wrapped in the main context nginx needs to run on its own. Nothing else
// of the template changes, so the test runs the routing, health and
// buffering settings that compose ships.
func renderConfig(t *testing.T, dir string, listen int, ports []int) string {
	t.Helper()
	b, err := os.ReadFile(templatePath())
	if err != nil {
		t.Fatal(err)
	}
	tmpl := string(b)
	if n := len(serverLine.FindAllString(tmpl, -1)); n != len(ports) {
		t.Fatalf("template has %d perpetuity-shard-N:8080 servers, want %d", n, len(ports))
	}
	if !listenLine.MatchString(tmpl) || !accessLine.MatchString(tmpl) || !errorLine.MatchString(tmpl) {
		t.Fatal("template lacks `listen 8080;` or its access or error log path")
	}
	tmpl = serverLine.ReplaceAllStringFunc(tmpl, func(m string) string {
		s := serverLine.FindStringSubmatch(m)
		var k int
		fmt.Sscan(s[2], &k)
		return fmt.Sprintf("%s127.0.0.1:%d%s", s[1], ports[k-1], s[3])
	})
	tmpl = listenLine.ReplaceAllString(tmpl, fmt.Sprintf("${1}127.0.0.1:%d;", listen))
	tmpl = accessLine.ReplaceAllString(tmpl, filepath.Join(dir, "access.log"))
	tmpl = errorLine.ReplaceAllString(tmpl, filepath.Join(dir, "error.log"))
	var temps strings.Builder
	for _, name := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o777); err != nil {
			t.Fatal(err)
		}
		_ = os.Chmod(p, 0o777) // the workers run as nobody under a root master
		fmt.Fprintf(&temps, "    %s_temp_path %s;\n", name, p)
	}
	return fmt.Sprintf(`daemon off;
worker_processes 1;
pid %s;
error_log %s warn;
events { worker_connections 1024; }
http {
%s
%s
}
`, filepath.Join(dir, "nginx.pid"), filepath.Join(dir, "error.log"), temps.String(), tmpl)
}

// balancer is a running nginx.
type balancer struct {
	URL string
	dir string
}

// AccessLog is nginx's access log so far.
func (b *balancer) AccessLog() string {
	out, _ := os.ReadFile(filepath.Join(b.dir, "access.log"))
	return string(out)
}

func (b *balancer) ErrorLog() string {
	out, _ := os.ReadFile(filepath.Join(b.dir, "error.log"))
	return string(out)
}

// startBalancer runs nginx with the rendered template in front of ports and
// waits until it listens. It is stopped when t ends.
func startBalancer(t *testing.T, bin string, ports []int) *balancer {
	t.Helper()
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o755)
	listen := freePort(t)
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(renderConfig(t, dir, listen, ports)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-t", "-q", "-e", filepath.Join(dir, "error.log"), "-p", dir, "-c", conf).CombinedOutput(); err != nil {
		t.Fatalf("nginx -t rejects the rendered template: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-e", filepath.Join(dir, "error.log"), "-p", dir, "-c", conf)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The master and its workers are one process group of ours.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", listen)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("nginx did not listen on %s:\n%s", addr, b)
		}
	}
	return &balancer{URL: "http://" + addr, dir: dir}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
