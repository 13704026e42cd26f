package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

// Machine describes where the figures were measured.
type Machine struct {
	CPU        string
	Cores      int // logical CPUs visible
	GOMAXPROCS int
	MemoryGiB  float64
	Go         string
	OS         string
	PostgreSQL string
	PGSettings string // the settings that move commit and read costs
	Date       time.Time
}

func describeMachine(ctx context.Context, db *store.DB) Machine {
	m := Machine{
		CPU: cpuModel(), Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		MemoryGiB: memTotalGiB(), Go: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH,
		Date: time.Now().UTC(),
	}
	if db == nil {
		return m
	}
	var v string
	if err := db.Pool.QueryRow(ctx, `SELECT current_setting('server_version')`).Scan(&v); err == nil {
		m.PostgreSQL = v
	}
	// autovacuum: where it is off, nothing vacuums the loaded tenants
	// during the run (vacuuming them after each load, as a server with it on
	// soon would, moved no figure of §2 beyond the noise).
	var fsync, sync, shared, wal, vacuum string
	err := db.Pool.QueryRow(ctx, `SELECT current_setting('fsync'), current_setting('synchronous_commit'),
		current_setting('shared_buffers'), current_setting('wal_sync_method'), current_setting('autovacuum')`).Scan(&fsync, &sync, &shared, &wal, &vacuum)
	if err == nil {
		m.PGSettings = fmt.Sprintf("fsync=%s, synchronous_commit=%s, wal_sync_method=%s, shared_buffers=%s, autovacuum=%s", fsync, sync, wal, shared, vacuum)
	}
	return m
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func memTotalGiB() float64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err == nil {
				return kb / (1 << 20)
			}
		}
	}
	return 0
}
