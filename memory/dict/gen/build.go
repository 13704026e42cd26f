package main

import (
	"slices"
	"strings"
)

// policy holds the choices that shape v1; each was measured on the LoCoMo
// development set (see memory/dict's TestLoCoMoBM25).
type policy struct {
	// conflict decides a generated form that WordNet also lists as a lemma
	// of its own ("painting", "building", "left", "ground"):
	// "never" keeps it a term, "always" maps it to its base, "freq" maps
	// it when the base is used more often (WordNet tagged-sense counts)
	// than the form is as a word of its own.
	conflict string
	// listBases also inflects words of the word list that WordNet lacks
	// ("selfie" -> "selfies"), not only WordNet lemmas.
	listBases bool
	// maxFamily is the largest derivational family v2 merges into one
	// term; larger ones chain unrelated senses together.
	maxFamily int
}

func defaultPolicy() policy { return policy{conflict: "always", listBases: true, maxFamily: 8} }

func buildV1(src *sources, pol policy) *dictionary {
	d := &dictionary{
		name:  "en-wordnet-scowl-v1",
		stop:  make(map[string]bool),
		terms: make(map[string]bool),
		forms: make(map[string]string),
	}
	for _, w := range stopwords() {
		d.stop[w] = true
	}
	// Candidate (form, base) pairs with the base's frequency in the part
	// of speech that produced them.
	type cand struct {
		base string
		freq int
	}
	cands := make(map[string][]cand)
	add := func(form, base string, pos int) {
		if form == base || d.stop[form] || d.stop[base] || !single(form) {
			return
		}
		freq := 1
		if t := src.tagged[base]; t != nil {
			freq = t[pos]
		}
		cands[form] = append(cands[form], cand{base, freq})
	}
	for pos := range nPOS {
		for _, e := range src.exc[pos] {
			add(e[0], e[1], pos)
		}
	}
	for _, base := range sortedKeys(src.tagged) {
		t := src.tagged[base]
		if t[noun] > 0 {
			for _, f := range sForms(base) {
				if src.attested[f] {
					add(f, base, noun)
				}
			}
		}
		if t[verb] > 0 {
			for _, f := range slices.Concat(sForms(base), edForms(base), ingForms(base)) {
				if src.attested[f] {
					add(f, base, verb)
				}
			}
		}
		if t[adj] > 0 {
			for _, f := range comparatives(base) {
				if src.attested[f] {
					add(f, base, adj)
				}
			}
		}
	}
	if pol.listBases {
		for _, base := range sortedKeys(src.attested) {
			if src.tagged[base] != nil {
				continue
			}
			for _, f := range slices.Concat(sForms(base), edForms(base), ingForms(base)) {
				if src.attested[f] && src.tagged[f] == nil {
					add(f, base, noun)
				}
			}
		}
	}
	for _, form := range sortedKeys(cands) {
		cs := cands[form]
		// The most used base wins; ties go to the shorter, then the
		// alphabetically first base, so the output is deterministic.
		slices.SortFunc(cs, func(a, b cand) int {
			if a.freq != b.freq {
				return b.freq - a.freq
			}
			if len(a.base) != len(b.base) {
				return len(a.base) - len(b.base)
			}
			return strings.Compare(a.base, b.base)
		})
		best := cs[0]
		if own := src.tagged[form]; own != nil {
			switch pol.conflict {
			case "never":
				continue
			case "freq":
				total := 0
				for _, n := range own {
					total += n
				}
				if best.freq <= total {
					continue
				}
			}
		}
		d.forms[form] = best.base
	}
	// A base can itself be a form ("buildings" -> "building" -> "build"):
	// follow chains to a word that is not a form. A form caught in a cycle
	// stays a term.
	resolved := make(map[string]string, len(d.forms))
	for form, lemma := range d.forms {
		for range 8 {
			next, ok := d.forms[lemma]
			if !ok {
				break
			}
			lemma = next
		}
		if _, still := d.forms[lemma]; !still && lemma != form {
			resolved[form] = lemma
		}
	}
	d.forms = resolved
	for w := range src.tagged {
		d.addTerm(w)
	}
	for w := range src.attested {
		d.addTerm(w)
	}
	for _, lemma := range d.forms {
		d.terms[lemma] = true
	}
	return d
}

func (d *dictionary) addTerm(w string) {
	if !d.stop[w] && d.forms[w] == "" {
		d.terms[w] = true
	}
}

func isVowel(c byte) bool { return strings.IndexByte("aeiou", c) >= 0 }

// cvc reports a final consonant-vowel-consonant (not w, x, y), after which
// English doubles the consonant: "stop" -> "stopped".
func cvc(w string) bool {
	n := len(w)
	if n < 3 {
		return false
	}
	a, b, c := w[n-3], w[n-2], w[n-1]
	return !isVowel(a) && isVowel(b) && !isVowel(c) && !strings.ContainsRune("wxy", rune(c))
}

func consonantY(w string) bool {
	n := len(w)
	return n >= 2 && w[n-1] == 'y' && !isVowel(w[n-2])
}

// The generators below over-generate on purpose; only forms the word list
// attests are kept.

func sForms(w string) []string {
	switch {
	case consonantY(w):
		return []string{w[:len(w)-1] + "ies"}
	case strings.HasSuffix(w, "s"), strings.HasSuffix(w, "x"), strings.HasSuffix(w, "z"),
		strings.HasSuffix(w, "ch"), strings.HasSuffix(w, "sh"):
		return []string{w + "es"}
	case strings.HasSuffix(w, "o"):
		return []string{w + "s", w + "es"}
	}
	return []string{w + "s"}
}

func edForms(w string) []string {
	switch {
	case strings.HasSuffix(w, "e"):
		return []string{w + "d"}
	case consonantY(w):
		return []string{w[:len(w)-1] + "ied"}
	case cvc(w):
		return []string{w + w[len(w)-1:] + "ed", w + "ed"}
	}
	return []string{w + "ed"}
}

func ingForms(w string) []string {
	switch {
	case strings.HasSuffix(w, "ie"):
		return []string{w[:len(w)-2] + "ying"}
	case strings.HasSuffix(w, "ee"), strings.HasSuffix(w, "ye"), strings.HasSuffix(w, "oe"):
		return []string{w + "ing"}
	case strings.HasSuffix(w, "e"):
		return []string{w[:len(w)-1] + "ing", w + "ing"}
	case cvc(w):
		return []string{w + w[len(w)-1:] + "ing", w + "ing"}
	}
	return []string{w + "ing"}
}

func comparatives(w string) []string {
	switch {
	case strings.HasSuffix(w, "e"):
		return []string{w + "r", w + "st"}
	case consonantY(w):
		return []string{w[:len(w)-1] + "ier", w[:len(w)-1] + "iest"}
	case cvc(w):
		return []string{w + w[len(w)-1:] + "er", w + w[len(w)-1:] + "est", w + "er", w + "est"}
	}
	return []string{w + "er", w + "est"}
}
