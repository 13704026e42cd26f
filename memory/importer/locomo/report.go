package locomo

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Scored is one question asked under one frame budget (0: the frame the
// server chose) and scored with ScoreRequest.
type Scored struct {
	Sample   string `json:"sample"`
	Question string `json:"question"`
	Category int    `json:"category"`
	Budget   int    `json:"budget"`
	Evidence int    `json:"evidence"` // evidence turns of the question
	Found    int    `json:"found"`    // of them, in the frame
	Tokens   int    `json:"tokens"`   // model tokens of the upstream messages
}

// Metrics are the bench README's figures over a set of questions.
type Metrics struct {
	Questions int `json:"-"`
	// Recall is the share of a question's evidence turns in the frame,
	// averaged over questions (macro), the definition the bench README's
	// BM25 baseline figures follow.
	Recall float64 `json:"recall"`
	// AllEvidence is the share of questions with every evidence turn in the frame.
	AllEvidence float64 `json:"all_evidence"`
	TokensMean  float64 `json:"frame_tokens_mean"`
	// TokensP95 is the nearest-rank 95th percentile.
	TokensP95 int `json:"frame_tokens_p95"`
}

// Summary is the --json output of the eval.
type Summary struct {
	// Questions is how many questions of categories 1-4 were scored.
	Questions int `json:"questions"`
	// Overall is the server-chosen frame over categories 1-4.
	Overall Metrics `json:"overall"`
	// ByCategory is the server-chosen frame per category (5 only here).
	ByCategory map[string]Metrics `json:"by_category"`
	// Ceilings are the fixed budgets over categories 1-4, keyed by tokens.
	Ceilings map[string]Metrics `json:"ceilings"`
	// Tools is each memory tool's reach into the evidence a fixed-budget
	// frame missed (eval --tools only).
	Tools map[string]Reach `json:"tools,omitempty"`
}

// CategoryNames are LoCoMo's question categories.
var CategoryNames = map[int]string{1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}

// counted says whether a category enters the overall figures: 5 is
// unanswerable and reported apart; unknown categories only apart too.
func counted(cat int) bool { return cat >= 1 && cat <= 4 }

// Measure computes the metrics of the scored probes that keep says to keep.
func Measure(all []Scored, keep func(Scored) bool) Metrics {
	var m Metrics
	var share float64
	var whole int
	var toks []int
	for _, s := range all {
		if !keep(s) {
			continue
		}
		m.Questions++
		if s.Evidence > 0 {
			share += float64(min(s.Found, s.Evidence)) / float64(s.Evidence)
		} else {
			share++
		}
		if s.Found >= s.Evidence {
			whole++
		}
		toks = append(toks, s.Tokens)
	}
	if m.Questions == 0 {
		return m
	}
	m.Recall = round(share/float64(m.Questions), 4)
	m.AllEvidence = round(float64(whole)/float64(m.Questions), 4)
	sum := 0
	for _, t := range toks {
		sum += t
	}
	m.TokensMean = round(float64(sum)/float64(len(toks)), 1)
	sort.Ints(toks)
	m.TokensP95 = toks[int(math.Ceil(0.95*float64(len(toks))))-1]
	return m
}

func round(x float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(x*p) / p
}

// Summarize builds the --json object.
func Summarize(all []Scored, budgets []int) Summary {
	s := Summary{ByCategory: map[string]Metrics{}, Ceilings: map[string]Metrics{}}
	s.Overall = Measure(all, func(x Scored) bool { return x.Budget == 0 && counted(x.Category) })
	s.Questions = s.Overall.Questions
	for _, c := range categories(all) {
		s.ByCategory[strconv.Itoa(c)] = Measure(all, func(x Scored) bool { return x.Budget == 0 && x.Category == c })
	}
	for _, b := range budgets {
		s.Ceilings[strconv.Itoa(b)] = Measure(all, func(x Scored) bool { return x.Budget == b && counted(x.Category) })
	}
	return s
}

func categories(all []Scored) []int {
	seen := map[int]bool{}
	var out []int
	for _, s := range all {
		if !seen[s.Category] {
			seen[s.Category] = true
			out = append(out, s.Category)
		}
	}
	sort.Ints(out)
	return out
}

// WriteTable prints the bench README's figures: per frame (server-chosen,
// then each budget) per category and overall, then the README's one-line
// comparison row.
func WriteTable(w io.Writer, all []Scored, budgets []int, samples int, elapsed time.Duration) {
	sum := Summarize(all, budgets)
	fmt.Fprintf(w, "LoCoMo retrieval recall: %d samples, %d questions in categories 1-4, %d probes, %s\n",
		samples, sum.Questions, len(all), elapsed.Round(100*time.Millisecond))
	fmt.Fprintln(w, "frame: server = the budget the server chose; @N = X-Perpetuity-Frame-Budget: N")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-7s %-16s %9s %7s %13s %12s %11s\n", "frame", "category", "questions", "recall", "all-evidence", "tokens mean", "tokens p95")
	frames := append([]int{0}, budgets...)
	cats := categories(all)
	for _, b := range frames {
		label := "server"
		if b > 0 {
			label = "@" + strconv.Itoa(b)
		}
		row := func(name string, m Metrics) {
			fmt.Fprintf(w, "%-7s %-16s %9d %7.3f %13.3f %12.1f %11d\n", label, name, m.Questions, m.Recall, m.AllEvidence, m.TokensMean, m.TokensP95)
			label = ""
		}
		for _, c := range cats {
			if counted(c) {
				row(categoryLabel(c), Measure(all, func(x Scored) bool { return x.Budget == b && x.Category == c }))
			}
		}
		row("overall (1-4)", Measure(all, func(x Scored) bool { return x.Budget == b && counted(x.Category) }))
		for _, c := range cats {
			if !counted(c) {
				row(categoryLabel(c), Measure(all, func(x Scored) bool { return x.Budget == b && x.Category == c }))
			}
		}
	}
	fmt.Fprintln(w)
	var head, sep, vals []string
	head = append(head, "method")
	sep = append(sep, "---")
	vals = append(vals, "perpetuity")
	for i, b := range budgets {
		h := "@" + strconv.Itoa(b)
		if i == 0 {
			h = "recall " + h
		}
		head, sep = append(head, h), append(sep, "---")
		vals = append(vals, fmt.Sprintf("%.3f", sum.Ceilings[strconv.Itoa(b)].Recall))
	}
	for i, b := range []int{2000, 4000} {
		m, ok := sum.Ceilings[strconv.Itoa(b)]
		if !ok {
			continue
		}
		h := "@" + strconv.Itoa(b)
		if i == 0 {
			h = "all-evidence " + h
		}
		head, sep = append(head, h), append(sep, "---")
		vals = append(vals, fmt.Sprintf("%.3f", m.AllEvidence))
	}
	for _, r := range [][]string{head, sep, vals} {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
	o := sum.Overall
	fmt.Fprintf(w, "\nserver-chosen frame, categories 1-4: recall %.3f, all-evidence %.3f, tokens mean %.0f, p95 %d\n",
		o.Recall, o.AllEvidence, o.TokensMean, o.TokensP95)
}

func categoryLabel(c int) string {
	if n, ok := CategoryNames[c]; ok {
		return strconv.Itoa(c) + " " + n
	}
	return "category " + strconv.Itoa(c)
}
