package memory

import (
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/memory/text"
)

// TestAlternatedTokens: counting a frame's turns part by part equals
// counting the turns Alternate sends, on parts that end and start in every
// way the pre-tokenizer treats apart (letters, punctuation that takes the
// newlines into its piece, spaces, newlines, '/', digits, contractions,
// labels, non-ASCII, invalid UTF-8), in runs of one role and alternating,
// starting with either role.
func TestAlternatedTokens(t *testing.T) {
	t.Parallel()
	c, err := text.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{
		"【Caroline】 I went to the support group yesterday.",
		"【5 May 2023, 2 years ago】\n【Melanie】 That's great?",
		"ends with punctuation?!",
		"ends with spaces   ",
		"ends with a newline\n",
		"\n starts with a newline",
		"  starts with spaces",
		"/starts with a slash",
		"//// and ?/",
		"123 numbers 4567",
		"'s a contraction start",
		"they'll",
		"naïve café — déjà vu 日本語のテキスト",
		"emoji 🙂🙂 end 🙂",
		"\xff invalid \xfe bytes \xc3",
		"\t\ttabs\t",
		"【now】\n【u1】 what did Caroline research?",
		"x",
	}
	roles := []string{"user", "assistant"}
	var cases []struct {
		name  string
		turns []Turn
	}
	for first := range roles {
		for _, pattern := range []string{"same", "alternate", "pairs"} {
			var turns []Turn
			for i, tx := range texts {
				r := first
				switch pattern {
				case "alternate":
					r = (first + i) % 2
				case "pairs":
					r = (first + i/2) % 2
				}
				turns = append(turns, Turn{Role: roles[r], Text: tx})
				if i%5 == 4 {
					turns = append(turns, Turn{Role: roles[r], Text: ""})
				}
			}
			cases = append(cases, struct {
				name  string
				turns []Turn
			}{roles[first] + " first, " + pattern, turns})
		}
	}
	// Every ordered pair of texts joined in one run: each boundary alone.
	for i, a := range texts {
		for j, b := range texts {
			cases = append(cases, struct {
				name  string
				turns []Turn
			}{"pair " + strings.Repeat("a", i) + "/" + strings.Repeat("b", j), []Turn{{Role: "user", Text: a}, {Role: "user", Text: b}}})
		}
	}
	for _, tc := range cases {
		want := 0
		for _, turn := range Alternate(tc.turns) {
			want += c.Count(turn.Text)
		}
		memo := map[string]int{}
		count := func(s string) int {
			if n, ok := memo[s]; ok {
				return n
			}
			memo[s] = c.Count(s)
			return memo[s]
		}
		got := 0
		for _, p := range parts(tc.turns) {
			got += joinedTokens(p, count, func(j int, join string) int { return count(p[j] + join) })
		}
		if got != want {
			t.Errorf("%s: part by part %d tokens, joined %d", tc.name, got, want)
		}
	}
}

// TestAlternate: runs of one role are joined with a blank line, empty turns
// dropped, and a frame that would start with the assistant padded.
func TestAlternate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   []Turn
		want []Turn
	}{
		{"empty", nil, []Turn{}},
		{"runs", []Turn{{"user", "a"}, {"user", "b"}, {"assistant", "c"}, {"assistant", ""}, {"assistant", "d"}, {"user", "e"}},
			[]Turn{{"user", "a\n\nb"}, {"assistant", "c\n\nd"}, {"user", "e"}}},
		{"padded", []Turn{{"assistant", "a"}, {"assistant", "b"}, {"user", "c"}},
			[]Turn{{"user", padFirst}, {"assistant", "a\n\nb"}, {"user", "c"}}},
		{"one run", []Turn{{"user", "a"}, {"user", "b"}, {"user", "c"}}, []Turn{{"user", "a\n\nb\n\nc"}}},
	} {
		got := Alternate(tc.in)
		if len(got) != len(tc.want) {
			t.Fatalf("%s: %q, want %q", tc.name, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: turn %d %q, want %q", tc.name, i, got[i], tc.want[i])
			}
		}
	}
}

// TestUnforged: the fast path returns what the replacer would, brackets
// or not, other characters sharing the brackets' first bytes included.
func TestUnforged(t *testing.T) {
	t.Parallel()
	if !strings.HasPrefix(labelOpen, labelBytes) || !strings.HasPrefix(labelClose, labelBytes) {
		t.Fatalf("labels %q %q do not start with %q", labelOpen, labelClose, labelBytes)
	}
	for _, s := range []string{"", "plain text", "a 【forged】 label", "】", "、。〃 CJK punctuation", "\xe3\x80", "x\xe3", "【"} {
		if got, want := unforged(s), unforge.Replace(s); got != want {
			t.Errorf("unforged(%q) = %q, want %q", s, got, want)
		}
	}
	if got := unforged("a 【b】"); got != "a [b]" {
		t.Errorf("unforged kept the brackets: %q", got)
	}
}

// TestPlural: counts past one take the plural.
func TestPlural(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0 days"}, {1, "1 day"}, {2, "2 days"}, {731, "731 days"}} {
		if got := plural(tc.n, "day"); got != tc.want {
			t.Errorf("plural(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// parts are the texts each turn of Alternate(in) joins.
func parts(in []Turn) [][]string {
	_, idx := alternate(in)
	out := make([][]string, len(idx))
	for k, p := range idx {
		out[k] = partTexts(in, p)
	}
	return out
}
