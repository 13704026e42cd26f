package bench

import (
	"strconv"
	"time"
)

// trimFloat formats v with prec decimals.
func trimFloat(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }

// itemsLabel is 10k, 250k, 1M.
func itemsLabel(n int) string {
	switch {
	case n >= 1_000_000 && n%100_000 == 0:
		return strconv.FormatFloat(float64(n)/1e6, 'f', -1, 64) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

// ms renders a duration in milliseconds with a precision that suits it.
func ms(d time.Duration) string {
	v := float64(d) / 1e6
	switch a := max(v, -v); {
	case a >= 100:
		return trimFloat(v, 0)
	case a >= 10:
		return trimFloat(v, 1)
	case a >= 1:
		return trimFloat(v, 2)
	default:
		return trimFloat(v, 3)
	}
}

// us renders a duration in microseconds.
func us(d time.Duration) string {
	v := float64(d) / 1e3
	if max(v, -v) >= 100 {
		return trimFloat(v, 0)
	}
	return trimFloat(v, 1)
}

// kB is n bytes in kB, to one decimal.
func kB(n int) string { return trimFloat(float64(n)/1000, 1) }
