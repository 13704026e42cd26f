package memory

import "time"

// Observer receives the engine's timings and sizes, for metrics. The engine
// works without one.
type Observer interface {
	// Duration reports how long a stage took: "capture", "catchup", "scan",
	// "render".
	Duration(stage string, d time.Duration)
	// FrameTokens reports a rendered frame's size.
	FrameTokens(n int)
}

type noObserver struct{}

func (noObserver) Duration(string, time.Duration) {}
func (noObserver) FrameTokens(int)                {}

// SetObserver installs an observer; call it before serving.
func (e *Engine) SetObserver(o Observer) { e.res.obs = o }

func (e *Engine) observer() Observer {
	if e.res.obs == nil {
		return noObserver{}
	}
	return e.res.obs
}

// ResidentStats sums the resident arenas of this process.
type ResidentStats struct {
	Tenants int
	Items   int
	Bytes   int64
}

// Resident reports what this process holds resident.
func (e *Engine) Resident() ResidentStats {
	rs := e.res
	rs.mu.Lock()
	all := make([]*resident, 0, len(rs.by))
	for _, r := range rs.by {
		all = append(all, r)
	}
	rs.mu.Unlock()
	var s ResidentStats
	for _, r := range all {
		r.mu.Lock()
		a := r.arena
		r.mu.Unlock()
		st := a.Stats()
		s.Tenants++
		s.Items += a.Len()
		s.Bytes += int64(st.BytesResident)
	}
	return s
}
