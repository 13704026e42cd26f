package memory_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/store"
)

func TestDateRanges(t *testing.T) {
	t.Parallel()
	day := func(y int, m time.Month, d int) string {
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Format("2006-01-02") + "+1d"
	}
	month := func(y int, m time.Month) string {
		return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC).Format("2006-01") + "+1m"
	}
	cases := []struct {
		in   string
		want []string
	}{
		{"What dish did Nate make on 9 November, 2022?", []string{day(2022, 11, 9)}},
		{"what happened on November 9th 2022", []string{day(2022, 11, 9)}},
		{"on the 3rd of Sept 2021?", []string{day(2021, 9, 3)}},
		{"see 2024-02-29 and 2023-02-29", []string{day(2024, 2, 29)}}, // 2023 has no 29 Feb
		{"What is Jolene doing in June 2023?", []string{month(2023, 6)}},
		{"in June, 2023 and on 1 June 2023", []string{month(2023, 6), day(2023, 6, 1)}},
		{"between March 2020 and may 2021", []string{month(2020, 3), month(2021, 5)}},
		{"31 June 2023 or 0 May 2023", []string{month(2023, 6), month(2023, 5)}}, // no such days: the months stand
		{"Jan 2020, Feb 2020, Mar 2020, Apr 2020", []string{month(2020, 1), month(2020, 2), month(2020, 3)}},
		{"May I ask about 2023?", nil},
		{"in 12 2023 or Junes 2023", nil},
		{"no date here", nil},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, r := range memory.DateRanges(c.in) {
				switch {
				case r.To.Equal(r.From.AddDate(0, 0, 1)):
					got = append(got, r.From.Format("2006-01-02")+"+1d")
				case r.To.Equal(r.From.AddDate(0, 1, 0)) && r.From.Day() == 1:
					got = append(got, r.From.Format("2006-01")+"+1m")
				default:
					got = append(got, fmt.Sprintf("%v..%v", r.From, r.To))
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

// FuzzDateRanges: any question text gives at most three well-formed ranges.
func FuzzDateRanges(f *testing.F) {
	for _, s := range []string{"on 9 November, 2022", "June 2023", "2024-02-29", "31st of dec 1999", "\xff May 2020"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rs := memory.DateRanges(s)
		if len(rs) > 3 {
			t.Fatalf("%d ranges", len(rs))
		}
		for _, r := range rs {
			if !r.From.Before(r.To) || r.To.Sub(r.From) > 31*24*time.Hour || r.From.Location() != time.UTC {
				t.Fatalf("bad range %v..%v from %q", r.From, r.To, s)
			}
		}
	})
}

// TestFrameReadsTheDayTheQuestionNames: a turn of the named day enters the
// frame though it shares no word with the question, and another user's
// turn of that day does not.
func TestFrameReadsTheDayTheQuestionNames(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	old := f.who(t, "alice", "kitchen")
	bob := f.who(t, "bob", "kitchen")
	at := time.Date(2022, 11, 9, 15, 0, 0, 0, time.UTC)
	say := func(w memory.Who, text string, pos int, when time.Time) {
		if _, err := f.eng.Capture(ctx, memory.Message{Who: w, Role: "user", Text: text, Position: pos, At: when}); err != nil {
			t.Fatal(err)
		}
	}
	say(old, "Baked a lemon tart with too much zest", 0, at)
	say(bob, "Grilled sardines for the whole street", 0, at)
	say(old, "Roasted peppers and a focaccia, lovely", 1, at.AddDate(0, 0, 1))
	f.filler(t, f.who(t, "alice", "busy"), 30)
	now := f.who(t, "alice", "today")
	q := "What did I cook on 9 November, 2022?"
	for _, dated := range []int{-1, 0} {
		eng := memory.New(f.db, wordAnalysis{}, wordAnalysis{}, memory.Options{Ceiling: 4000, Floor: 200, Recent: 2, BaseTau: 200, DatedRank: dated})
		fr, err := eng.Frame(ctx, memory.FrameQuery{Who: now, Live: q, Probe: true, Now: at.AddDate(1, 0, 0)})
		if err != nil {
			t.Fatal(err)
		}
		txt := frameText(fr)
		if got := strings.Contains(txt, "lemon tart"); got != (dated == 0) {
			t.Fatalf("dates read %v: the named day's turn shown %v:\n%s", dated == 0, got, txt)
		}
		if strings.Contains(txt, "sardines") || strings.Contains(txt, "focaccia") {
			t.Fatalf("another user's turn or another day's entered the frame:\n%s", txt)
		}
	}
}

// TestDatedRangesWholeOrMatchesOnly: a named range with few turns comes
// back whole (with token counts), one with more than a day of chat only as
// ids for the matches to be looked up in.
func TestDatedRangesWholeOrMatchesOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	w := f.who(t, "alice", "diary")
	day := time.Date(2023, 3, 9, 8, 0, 0, 0, time.UTC)
	for i := range 3 {
		if _, err := f.eng.Capture(ctx, memory.Message{Who: w, Role: "user", Text: fmt.Sprintf("quiet day note %d", i), Position: i, At: day.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	busy := time.Date(2023, 4, 1, 0, 0, 0, 0, time.UTC)
	for i := range 70 {
		if _, err := f.eng.Capture(ctx, memory.Message{Who: w, Role: "user", Text: fmt.Sprintf("busy month note %d", i), Position: 100 + i, At: busy.Add(time.Duration(i) * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		q             string
		whole, ranged int
	}{
		{"on 9 March 2023?", 3, 0},
		{"in March 2023?", 3, 0},
		{"in April 2023?", 0, 70},
		{"on 2 April 2023?", 24, 0},
		{"on 2 April 2023 and in March 2023?", 27, 0},
	} {
		in, err := f.db.ReadFrameInputs(ctx, f.nt.TenantID, store.FrameRead{ViewerID: w.UserID, ConvID: w.ConversationID,
			Horizon: 1, Recent: 1, Dated: memory.DateRanges(tc.q)})
		if err != nil {
			t.Fatal(err)
		}
		if len(in.Dated) != tc.whole || len(in.InRanges) != tc.ranged {
			t.Errorf("%q: %d whole, %d ranged; want %d, %d", tc.q, len(in.Dated), len(in.InRanges), tc.whole, tc.ranged)
		}
		for _, id := range in.Dated {
			if in.Tokens[id] <= 0 {
				t.Errorf("%q: item %d without its token count", tc.q, id)
			}
		}
	}
}
