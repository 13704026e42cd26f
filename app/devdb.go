package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"time"
)

// privatePort is where a private cluster under ./.data/pg listens, away from
// the system server's 5432.
const privatePort = 54329

// devDatabase finds a PostgreSQL for `make run` and `make test`, in the order
// the README promises: DATABASE_URL; a server at 127.0.0.1:5432; a private
// cluster under dataDir/pg started from the system's binaries; (root on
// Debian) apt-get install postgresql; else an error saying what to do.
func devDatabase(ctx context.Context, getenv func(string) string, dataDir string, log io.Writer) (string, error) {
	if u := getenv("DATABASE_URL"); u != "" {
		return u, nil
	}
	const local = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	if reachable("127.0.0.1:5432") {
		return local, nil
	}
	bin := postgresBinDir()
	if bin == "" && os.Geteuid() == 0 && fileExists("/usr/bin/apt-get") {
		fmt.Fprintln(log, "perpetuity: no PostgreSQL found; installing Debian's postgresql with apt-get")
		if err := runCmd(ctx, log, "", "apt-get", "update"); err != nil {
			return "", fmt.Errorf("apt-get update: %w", err)
		}
		if err := runCmd(ctx, log, "", "apt-get", "install", "-y", "postgresql"); err != nil {
			return "", fmt.Errorf("apt-get install postgresql: %w", err)
		}
		bin = postgresBinDir()
	}
	if bin == "" {
		return "", errors.New("no PostgreSQL found: set DATABASE_URL to a server, start one on 127.0.0.1:5432, " +
			"or install PostgreSQL (Debian: sudo apt-get install postgresql) so a private cluster can be started under ./.data/pg")
	}
	return privateCluster(ctx, bin, filepath.Join(dataDir, "pg"), log)
}

// privateCluster initialises (once) and starts a trust-auth cluster owned by
// the invoking user, or by "postgres" when running as root (initdb refuses root).
func privateCluster(ctx context.Context, bin, dir string, log io.Writer) (string, error) {
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", privatePort)
	if reachable(fmt.Sprintf("127.0.0.1:%d", privatePort)) {
		return url, nil
	}
	runAs := ""
	if os.Geteuid() == 0 {
		runAs = "postgres"
		if _, err := user.Lookup(runAs); err != nil {
			return "", errors.New("running as root and no 'postgres' system user to own a private cluster: set DATABASE_URL")
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if !fileExists(filepath.Join(abs, "PG_VERSION")) {
		if err := os.MkdirAll(abs, 0o700); err != nil {
			return "", err
		}
		if runAs != "" {
			if err := runCmd(ctx, log, "", "chown", "-R", runAs, filepath.Dir(abs)); err != nil {
				return "", err
			}
		}
		fmt.Fprintf(log, "perpetuity: creating a private PostgreSQL cluster in %s\n", abs)
		if err := runCmd(ctx, log, runAs, filepath.Join(bin, "initdb"), "-D", abs, "-U", "postgres", "--auth=trust", "-E", "UTF8"); err != nil {
			return "", fmt.Errorf("initdb: %w", err)
		}
	}
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -k %s", privatePort, abs)
	if err := runCmd(ctx, log, runAs, filepath.Join(bin, "pg_ctl"), "-D", abs, "-o", opts, "-l", filepath.Join(abs, "server.log"), "-w", "start"); err != nil {
		return "", fmt.Errorf("start private cluster: %w", err)
	}
	return url, nil
}

// postgresBinDir returns the newest /usr/lib/postgresql/N/bin with initdb.
func postgresBinDir() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if fileExists(filepath.Join(d, "initdb")) {
			return d
		}
	}
	return ""
}

func versionOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func reachable(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func runCmd(ctx context.Context, log io.Writer, runAs, name string, args ...string) error {
	if runAs != "" {
		args = append([]string{"-u", runAs, "--", name}, args...)
		name = "runuser"
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = log, log
	return cmd.Run()
}
