package injection

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/perpetuity/perpetuity/e2e/fakeprovider"
	"github.com/perpetuity/perpetuity/memory"
)

// unforge is what the renderer does to stored text: the label brackets
// become plain ones.
var unforge = strings.NewReplacer("【", "[", "】", "]")

var labelRE = regexp.MustCompile(`【([^【】]*)】`)

// The labels the renderer makes (memory/render.go): the preamble, the
// trimmed notice, "now", a time, "this conversation" with a time, and a
// speaker with an optional interrupted mark and turn id.
const stampPattern = `\d{1,2} [A-Z][a-z]{2} \d{4}(?: \d{2}:\d{2})?, (?:just now|\d+ (?:minute|hour|day|month|year)s? ago)`

var (
	fixedLabelRE = regexp.MustCompile(`^(?:memory: past turns verbatim, oldest first|less relevant memory left out(?:; ` +
		memory.ToolReopen + ` reaches it)?|now|(?:this conversation, )?` + stampPattern + `)$`)
	speakerLabelRE = regexp.MustCompile(`(?s)^(.*?)(?: · interrupted)?(?: #\d+)?$`)
	// quotedBefore is a genuine speaker label right before an injected copy.
	quotedBefore = regexp.MustCompile(`【([^【】]*)】 $`)
)

// audit takes the provider requests apart and counts.
type audit struct {
	speakers map[string]bool // names a speaker label may carry
	failures []string

	inSystem int // injected copies in a system position
	unquoted int // copies not right after a genuine speaker label in a user, assistant or tool message
	altered  int // copies that do not read as stored (with [ ] for 【】)
	survived int // label brackets of the payloads still 【】 in a copy
	planted  int // label brackets in the stored copies as they reached the provider
	copies   int
	recalled map[string]int // marker -> copies in recall-phase requests
}

func newAudit() *audit {
	sp := map[string]bool{"assistant": true, "unknown": true, unforge.Replace(userName): true}
	for _, s := range importSpeakers {
		sp[unforge.Replace(strings.TrimSpace(s))] = true
	}
	return &audit{speakers: sp, recalled: map[string]int{}}
}

func (a *audit) fail(format string, args ...any) {
	if len(a.failures) < 40 {
		a.failures = append(a.failures, fmt.Sprintf(format, args...))
	}
}

// genuine reports whether a label is one the renderer makes.
func (a *audit) genuine(label string) bool {
	if fixedLabelRE.MatchString(label) {
		return true
	}
	m := speakerLabelRE.FindStringSubmatch(label)
	return m != nil && a.speakers[m[1]]
}

func (a *audit) speaker(label string) bool {
	if fixedLabelRE.MatchString(label) {
		return false
	}
	m := speakerLabelRE.FindStringSubmatch(label)
	return m != nil && a.speakers[m[1]]
}

// stored is the text stored under a marker.
func stored(mk string) (string, bool) {
	i, err := strconv.Atoi(mk[5:])
	if err != nil || i >= len(payloads) {
		return "", false
	}
	return text(mk[4:5], i), true
}

func (a *audit) request(r fakeprovider.Recorded, n int, recall bool) {
	if r.Dialect == fakeprovider.DialectOther {
		return
	}
	where := fmt.Sprintf("request %d (%s %s)", n, r.Dialect, r.Path)
	ps, err := parts(r)
	if err != nil {
		a.fail("%s: %v", where, err)
		return
	}
	for _, p := range ps {
		// The tool instruction names the label brackets ("labels in 【】").
		txt := strings.ReplaceAll(p.text, memory.ToolInstructions, "")
		if p.system {
			if markerRE.MatchString(txt) || strings.Contains(txt, "FORGED") {
				a.inSystem++
				a.fail("%s: injected text in a system position (%s): %q", where, p.role, txt)
			} else if rest := strings.TrimSpace(strings.ReplaceAll(txt, system, "")); rest != "" {
				a.fail("%s: the system position carries more than the harness's prompt and the tool instruction: %q", where, rest)
			}
		}
		for _, m := range labelRE.FindAllStringSubmatch(txt, -1) {
			if !a.genuine(m[1]) {
				a.survived++
				a.fail("%s: a label the renderer does not make reached the provider in a %s message: %q", where, p.role, m[0])
			}
		}
		for _, loc := range markerRE.FindAllStringIndex(txt, -1) {
			mk := txt[loc[0]:loc[1]]
			orig, ok := stored(mk)
			if !ok {
				a.fail("%s: unknown marker %s", where, mk)
				continue
			}
			a.copies++
			if recall {
				a.recalled[mk]++
			}
			a.planted += strings.Count(orig, "【") + strings.Count(orig, "】")
			want := unforge.Replace(orig)
			got := txt[loc[0]:min(len(txt), loc[0]+len(want))]
			if got != want {
				a.altered++
				a.fail("%s: %s reached the provider as %q, stored as %q", where, mk, got, orig)
				if raw := txt[loc[0]:min(len(txt), loc[0]+len(orig))]; raw == orig {
					got = raw // passed through untouched: every bracket survived
				}
			}
			a.survived += strings.Count(got, "【") + strings.Count(got, "】")
			q := quotedBefore.FindStringSubmatch(txt[:loc[0]])
			quoted := !p.system && (p.role == "user" || p.role == "assistant" || p.role == "tool") && q != nil && a.speaker(q[1])
			if !quoted {
				a.unquoted++
				a.fail("%s: %s is not a quoted past turn (role %s): %q", where, mk, p.role, txt[max(0, loc[0]-80):loc[1]])
			}
		}
	}
}
