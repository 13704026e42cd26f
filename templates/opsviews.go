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
	Percent int    // derivation progress, 0..100
	Derived int64  // items derived so far
	Total   int64  // items when the derivation started
	ETA     string // "about 2 minutes left", when it can be told
}

// DictConfirm asks before a step that changes what a team serves or what
// it can go back to, saying what the step does.
type DictConfirm struct {
	Version int
	Action  string // "flip" or "retire"
	Title   string
	Effects []string
	Button  string
	Danger  bool
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
	Failed     int // checks that found violations
	Checks     int // checks the report covers
	Error      string
}

// Check outcomes on an integrity report.
const (
	CheckPass    = "pass"
	CheckFail    = "fail"
	CheckPartial = "partial" // passed where it looked; part was not checked
	CheckSkipped = "skipped" // not checked at all
)

// CheckRow is one check of an integrity report, in words.
type CheckRow struct {
	Name       string
	Means      string // what it checks
	Outcome    string // a Check* constant
	Violations int64
	Why        string // why part or all of it was not checked
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
	Checks     []CheckRow
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

// rolloutRest is a derivation's progress after its percentage: items done
// of all, then how long is left or that it stopped.
func rolloutRest(r DictVersionRow) string {
	s := " · " + Count(r.Derived) + " of " + Count(r.Total) + " items"
	switch {
	case r.State == DictStalled:
		s += " · stopped midway"
	case r.ETA != "":
		s += " · " + r.ETA
	}
	return s
}
