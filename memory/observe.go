package memory

import "time"

// Observer receives the engine's timings and sizes, for metrics. The engine
// works without one.
type Observer interface {
	// Duration reports how long a stage took: "capture", "catchup", "scan",
	// "render", and "load" for an arena loaded from scratch (a tenant's
	// first use in this process, or its first after an eviction).
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
