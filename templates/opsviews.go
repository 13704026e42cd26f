package templates

import "strconv"

// Rollout states a dictionary version can be in for the tenant.
const (
	DictServing  = "serving"
	DictDeriving = "deriving" // a worker is deriving it now
	DictStalled  = "stalled"  // derivation stopped midway; derive resumes it
	DictReady    = "ready"    // derived, kept: flip to it (or back to it)
	DictNone     = ""         // loaded, not derived for this tenant
)

// DictVersionRow is one loaded dictionary version as the tenant sees it.
type DictVersionRow struct {
	Version int
	Name    string
	Entries int
	Loaded  string
	State   string
	Percent int   // derivation progress, 0..100
	Derived int64 // rows derived so far
	Total   int64 // items when the derivation started
	Worker  string
}

// Dictionaries is the dictionary rollouts page.
type Dictionaries struct {
	Active    int
	Rows      []DictVersionRow
	Shipped   []Option // shipped versions not loaded yet (platform admins load them)
	CanUpload bool
	Error     string
}

// IntegrityRow is one kept integrity report.
type IntegrityRow struct {
	ID         int64
	Started    string
	Finished   string // empty while running
	Actor      string
	Items      int64
	Violations int64
	Summary    string // violations per invariant
	Error      string
}

// Running reports whether the check has not finished (or died unfinished).
func (r IntegrityRow) Running() bool { return r.Finished == "" }

// Integrity is the integrity reports page.
type Integrity struct {
	Rows  []IntegrityRow
	Error string
}

// ViolationRow is one broken invariant with the rows involved.
type ViolationRow struct {
	Invariant string
	Item      string
	Detail    string
	Rows      string
}

// IntegrityDetail is one report with its violations.
type IntegrityDetail struct {
	Report     IntegrityRow
	Serving    string // "v1 at log position 42"
	Notes      []string
	Violations []ViolationRow
	More       int64 // violations kept but not listed here
}

// PurgeForm is the typed confirmation of a purge.
type PurgeForm struct {
	UserID int64
	Name   string
	Items  int64
	Error  string
}

func vtoa(v int) string { return strconv.Itoa(v) }

func dictPath(v int, action string) string { return "/console/dictionaries/" + vtoa(v) + "/" + action }
