package dict

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
)

// data holds the shipped versions as data/vN.tsv. A new version is a new
// file; a shipped file never changes, because retrieval rows derived from it
// are stored.
//
//go:embed data/*.tsv
var data embed.FS

// Latest is the newest shipped version. Which version a tenant serves is
// the database's decision (tenant_heads.dict_version, 1 by default); moving
// to a newer one is a rollout (derive, then flip).
const Latest = 2

// Builtin parses the shipped dictionary of the given version. It parses on
// every call (a fraction of a second): call it once at start and share the
// result.
func Builtin(version int) (*Dictionary, error) {
	raw, err := data.ReadFile(fmt.Sprintf("data/v%d.tsv", version))
	if err != nil {
		return nil, fmt.Errorf("builtin dictionary v%d: %w", version, err)
	}
	d, err := Parse(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("builtin dictionary v%d: %w", version, err)
	}
	if d.Version != version {
		return nil, fmt.Errorf("builtin dictionary v%d: file says version %d", version, d.Version)
	}
	return d, nil
}

// BuiltinVersions lists the shipped versions in ascending order.
func BuiltinVersions() []int {
	entries, err := fs.ReadDir(data, "data")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		name, ok := strings.CutSuffix(strings.TrimPrefix(e.Name(), "v"), ".tsv")
		if v, err := strconv.Atoi(name); ok && err == nil {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}
