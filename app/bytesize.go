package app

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// byteUnits are the suffixes a size may carry: binary (KiB = 1024) and
// decimal (kB = 1000), in any case.
var byteUnits = []struct {
	suffix string
	mult   float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12}, {"b", 1},
}

// parseBytes reads a size such as 536870912, 512MiB, 1.5GiB or 2GB.
func parseBytes(s string) (int64, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	mult := 1.0
	for _, u := range byteUnits {
		if strings.HasSuffix(v, u.suffix) {
			v, mult = strings.TrimSpace(strings.TrimSuffix(v, u.suffix)), u.mult
			break
		}
	}
	if v == "" || strings.ContainsAny(v, "+-eExX_") {
		return 0, fmt.Errorf("%q is not a size (e.g. 512MiB, 2GiB or a number of bytes)", s)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f*mult > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is not a size (e.g. 512MiB, 2GiB or a number of bytes)", s)
	}
	return int64(math.Round(f * mult)), nil
}
