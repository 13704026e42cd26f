package chain

import "time"

// SetSettle lets a test widen the wait after a kick (settle).
func (w *Writer) SetSettle(d time.Duration) { w.settle = d }
