package memory

import (
	"cmp"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

// Dates named in a question ("what did we cook on 9 November, 2022?", "in
// June 2023") pick out when something was said, which the words of the
// question often do not: the turns of that day rarely repeat the question's
// words. Only absolute calendar dates are read, as UTC days or months, the
// same calendar the frame's labels use; relative ones ("last week") would
// need the asker's clock and time zone.

const monthNames = `jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?`

var (
	dayMonthYear = regexp.MustCompile(`(?i)\b(\d{1,2})(?:st|nd|rd|th)?(?:\s+of)?\s+(` + monthNames + `)\.?,?\s+(\d{4})\b`)
	monthDayYear = regexp.MustCompile(`(?i)\b(` + monthNames + `)\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b`)
	isoDay       = regexp.MustCompile(`\b(\d{4})-(\d{2})-(\d{2})\b`)
	monthYear    = regexp.MustCompile(`(?i)\b(` + monthNames + `)\.?,?\s+(?:of\s+)?(\d{4})\b`)
)

// maxDateRanges bounds what one question can ask the store for.
const maxDateRanges = 3

// DateRanges reads the calendar days and months a text names, in order,
// without repeats, at most maxDateRanges. A day is matched before the month
// around it, so "9 November, 2022" is that day, not the month.
func DateRanges(s string) []store.TimeRange {
	var out []store.TimeRange
	add := func(r store.TimeRange) {
		for _, o := range out {
			if o == r {
				return
			}
		}
		if len(out) < maxDateRanges {
			out = append(out, r)
		}
	}
	taken := make([]bool, len(s))
	free := func(loc []int) bool {
		for i := loc[0]; i < loc[1]; i++ {
			if taken[i] {
				return false
			}
		}
		for i := loc[0]; i < loc[1]; i++ {
			taken[i] = true
		}
		return true
	}
	type found struct {
		at int
		r  store.TimeRange
	}
	var all []found
	scan := func(re *regexp.Regexp, conv func(m []string) (store.TimeRange, bool)) {
		for _, loc := range re.FindAllStringSubmatchIndex(s, -1) {
			m := make([]string, len(loc)/2)
			for i := range m {
				if loc[2*i] >= 0 {
					m[i] = s[loc[2*i]:loc[2*i+1]]
				}
			}
			if r, ok := conv(m); ok && free(loc[:2]) {
				all = append(all, found{loc[0], r})
			}
		}
	}
	scan(dayMonthYear, func(m []string) (store.TimeRange, bool) { return day(m[3], m[2], m[1]) })
	scan(monthDayYear, func(m []string) (store.TimeRange, bool) { return day(m[3], m[1], m[2]) })
	scan(isoDay, func(m []string) (store.TimeRange, bool) { return day(m[1], m[2], m[3]) })
	scan(monthYear, func(m []string) (store.TimeRange, bool) { return month(m[2], m[1]) })
	// In the order the text names them.
	slices.SortFunc(all, func(a, b found) int { return cmp.Compare(a.at, b.at) })
	for _, f := range all {
		add(f.r)
	}
	return out
}

func monthNumber(name string) (time.Month, bool) {
	if n, err := strconv.Atoi(name); err == nil {
		return time.Month(n), n >= 1 && n <= 12
	}
	name = strings.ToLower(name)
	for m := time.January; m <= time.December; m++ {
		if strings.HasPrefix(strings.ToLower(m.String()), name[:3]) {
			return m, true
		}
	}
	return 0, false
}

func yearNumber(s string) (int, bool) {
	y, err := strconv.Atoi(s)
	return y, err == nil && y >= 1900 && y <= 2200
}

func day(year, mon, dom string) (store.TimeRange, bool) {
	y, ok := yearNumber(year)
	m, okm := monthNumber(mon)
	d, err := strconv.Atoi(dom)
	if !ok || !okm || err != nil || d < 1 || d > 31 {
		return store.TimeRange{}, false
	}
	from := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	if from.Month() != m { // 31 June
		return store.TimeRange{}, false
	}
	return store.TimeRange{From: from, To: from.AddDate(0, 0, 1)}, true
}

func month(year, mon string) (store.TimeRange, bool) {
	y, ok := yearNumber(year)
	m, okm := monthNumber(mon)
	if !ok || !okm {
		return store.TimeRange{}, false
	}
	from := time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	return store.TimeRange{From: from, To: from.AddDate(0, 1, 0)}, true
}
