package ops

import (
	"strings"

	"github.com/perpetuity/perpetuity/memory/store"
)

// Check is one check of the integrity report as a person reads it: a
// group of invariants that answer one question about a team's memory.
type Check struct {
	Name       string
	Means      string   // what it checks, in words
	Invariants []string // the violations it counts
	// notes are the prefixes of the run's notes saying that part of this
	// check was not done (see checkRun.note).
	notes []string
}

// Checks are every check of the integrity report, in the order the report
// lists them; every invariant belongs to exactly one.
func Checks() []Check {
	return []Check{
		{Name: "Retrieval rows", Means: "Every item has one retrieval row per version kept for this team, equal to a fresh derivation of its stored words.",
			Invariants: []string{InvRowMissing, InvRowMismatch}, notes: []string{"rows of v"}},
		{Name: "Scoring counts", Means: "The word frequencies, item count and total length that scoring uses equal a recount of the rows.",
			Invariants: []string{InvTermStats, InvCorpusStats}},
		{Name: "Birth and decay", Means: "Every item was born hot for its owner and has its birth record; its decay constant, novelty and birth clock are unchanged since.",
			Invariants: []string{InvBirthActivation, InvBirthRecord, InvBirthChanged}},
		{Name: "Team boundaries", Means: "Each item's owner, conversation and message belong to one memory user of this team, and only this team's users hold heat for its items.",
			Invariants: []string{InvTenantOwner, InvTenantConversation, InvTenantMessage, InvTenantViewer}},
		{Name: "Serving memory", Means: "This serving process's in-memory copy holds exactly the stored items and rows of the version this team serves.",
			Invariants: []string{InvArenaMissing, InvArenaExtra, InvArenaDiffers, InvArenaVersion, InvArenaDuplicate}, notes: []string{"arena not compared"}},
		{Name: "Chain graph", Means: "Every link between turns joins two existing items of one user, and the stored links equal a rebuild from the log.",
			Invariants: []string{InvChainOwner, InvChainDangling, InvChainWatermark, InvChainRebuild}, notes: []string{"chain edges"}},
		{Name: "Arena segments", Means: "Every stored run of rows that a restarted process loads in place of the rows decodes to exactly the rows it stands for.",
			Invariants: []string{InvSegmentRows}},
		{Name: "Labels", Means: "Every name, speaker and title a frame could show resolves through a binding; the console lists the latest, and a conversation's bindings name its owner.",
			Invariants: []string{InvBindingUnbound, InvBindingStale, InvBindingOwner}},
	}
}

// CheckResult is how one check came out in a finished report.
type CheckResult struct {
	Check
	Violations int64
	// NotDone says why part of the check was not done ("" when all was);
	// Skipped is when none of it was.
	NotDone string
	Skipped bool
}

// Failed reports whether the check found violations.
func (r CheckResult) Failed() bool { return r.Violations > 0 }

// Results reads a finished report as one result per check. Violations of
// an invariant no check names (a report older than this binary) are
// counted in an extra check so nothing is hidden.
func Results(rep store.IntegrityReport) []CheckResult {
	var notes []string
	for _, n := range strings.Split(rep.Notes, "; ") {
		if n != "" {
			notes = append(notes, n)
		}
	}
	known := map[string]bool{}
	var out []CheckResult
	for _, c := range Checks() {
		r := CheckResult{Check: c}
		for _, inv := range c.Invariants {
			known[inv] = true
			r.Violations += rep.Counts[inv]
		}
		var why []string
		for _, n := range notes {
			for _, p := range c.notes {
				if strings.HasPrefix(n, p) {
					why = append(why, n)
				}
			}
		}
		r.NotDone = strings.Join(why, "; ")
		// The arena is compared as a whole or not at all.
		r.Skipped = r.NotDone != "" && c.Name == "Serving memory"
		out = append(out, r)
	}
	other := CheckResult{Check: Check{Name: "Other", Means: "Invariants this version of the console does not describe."}}
	for inv, n := range rep.Counts {
		if !known[inv] {
			other.Invariants = append(other.Invariants, inv)
			other.Violations += n
		}
	}
	if other.Violations > 0 {
		out = append(out, other)
	}
	return out
}
