package web

import (
	"fmt"
	"time"

	"github.com/perpetuity/perpetuity/memory"
)

// exact is a timestamp as the console shows it everywhere: UTC, to the minute.
func exact(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// ago is t relative to now, worded as the engine words a turn's age in the
// frames it renders; a zero time never happened.
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return memory.Age(t, now)
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// agoPtr is ago for a nullable column.
func agoPtr(t *time.Time, now time.Time) string {
	if t == nil {
		return "never"
	}
	return ago(*t, now)
}

// share is part of whole as a percentage to one decimal; "–" when there
// is nothing to share.
func share(part, whole int64) string {
	if whole == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(whole))
}
