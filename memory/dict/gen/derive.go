package main

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Version 2 adds derivational morphology to v1: WordNet links words that
// derive from one another ("adopt" - "adoption" - "adopter", "paint" -
// "painter", "marry" - "marriage") with its lexical "+" pointers. v2 maps
// every word of such a family to one term, so a question about "adoption"
// finds the turn that says "adopting". Only links between words that share
// their stem are followed, which keeps "act" apart from "action" (too short
// to tell) and leaves out links between unrelated spellings.

// derivLinks reads the "+" pointers of the WordNet data files as word pairs.
func derivLinks(wordnetDir string) ([][2]string, error) {
	type synset struct {
		words []string
		ptrs  []ptr
	}
	sets := make(map[string]*synset) // "pos:offset"
	for pos := range nPOS {
		name := posName(pos)
		if err := eachLine(filepath.Join(wordnetDir, "data."+name), func(line string) {
			if strings.HasPrefix(line, " ") {
				return
			}
			s, key, ok := parseSynset(line)
			if ok {
				sets[key] = &synset{words: s.words, ptrs: s.ptrs}
			}
		}); err != nil {
			return nil, err
		}
	}
	var out [][2]string
	for _, key := range sortedKeys(sets) {
		s := sets[key]
		for _, p := range s.ptrs {
			t := sets[p.target]
			if t == nil || p.src < 1 || p.src > len(s.words) || p.dst < 1 || p.dst > len(t.words) {
				continue
			}
			out = append(out, [2]string{s.words[p.src-1], t.words[p.dst-1]})
		}
	}
	return out, nil
}

type ptr struct {
	target   string // "pos:offset"
	src, dst int    // 1-based word numbers
}

type parsedSynset struct {
	words []string
	ptrs  []ptr
}

// parseSynset reads one data.* line:
// offset lex_filenum ss_type w_cnt word lex_id ... p_cnt ptr... | gloss
func parseSynset(line string) (parsedSynset, string, bool) {
	var s parsedSynset
	if i := strings.Index(line, " | "); i >= 0 {
		line = line[:i]
	}
	f := strings.Fields(line)
	if len(f) < 5 {
		return s, "", false
	}
	key := posKey(f[2]) + ":" + f[0]
	n, err := strconv.ParseInt(f[3], 16, 32)
	if err != nil || 4+2*int(n) >= len(f) {
		return s, "", false
	}
	for i := 0; i < int(n); i++ {
		w := strings.ToLower(f[4+2*i])
		if j := strings.IndexByte(w, '('); j > 0 { // adjective markers: "big(a)"
			w = w[:j]
		}
		s.words = append(s.words, w)
	}
	at := 4 + 2*int(n)
	pc, err := strconv.Atoi(f[at])
	if err != nil {
		return s, "", false
	}
	at++
	for i := 0; i < pc && at+3 < len(f); i++ {
		sym, off, pos, st := f[at], f[at+1], f[at+2], f[at+3]
		at += 4
		if sym != "+" || len(st) != 4 {
			continue
		}
		src, err1 := strconv.ParseInt(st[:2], 16, 32)
		dst, err2 := strconv.ParseInt(st[2:], 16, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		s.ptrs = append(s.ptrs, ptr{target: posKey(pos) + ":" + off, src: int(src), dst: int(dst)})
	}
	return s, key, true
}

// posKey folds WordNet's adjective satellites ("s") into adjectives ("a").
func posKey(p string) string {
	if p == "s" {
		return "a"
	}
	return p
}

// sameStem accepts a derivational link between words that visibly share a
// stem: a common prefix of at least four letters, or the shorter word (less
// a final "e" or "y") being a prefix of the longer one ("wed" - "wedding").
func sameStem(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	cp := 0
	for cp < len(a) && a[cp] == b[cp] {
		cp++
	}
	if cp >= 4 {
		return true
	}
	stem := strings.TrimRight(a, "ey")
	return len(stem) >= 3 && strings.HasPrefix(b, stem)
}

// addDerivations merges derivational families into single terms.
func addDerivations(d *dictionary, src *sources, links [][2]string, maxFamily int) {
	canon := func(w string) string {
		if l, ok := d.forms[w]; ok {
			return l
		}
		return w
	}
	parent := make(map[string]string)
	var find func(string) string
	find = func(w string) string {
		p, ok := parent[w]
		if !ok || p == w {
			return w
		}
		r := find(p)
		parent[w] = r
		return r
	}
	for _, l := range links {
		a, b := canon(l[0]), canon(l[1])
		if a == b || !d.terms[a] || !d.terms[b] || !sameStem(l[0], l[1]) {
			continue
		}
		ra, rb := find(a), find(b)
		if ra == rb {
			continue
		}
		if ra > rb { // deterministic roots
			ra, rb = rb, ra
		}
		parent[ra] = ra
		parent[rb] = ra
	}
	families := make(map[string][]string)
	for w := range parent {
		r := find(w)
		families[r] = append(families[r], w)
	}
	freq := func(w string) int {
		n := 0
		if t := src.tagged[w]; t != nil {
			for _, c := range t {
				n += c
			}
		}
		return n
	}
	for _, r := range sortedKeys(families) {
		fam := families[r]
		if len(fam) < 2 || len(fam) > maxFamily {
			continue
		}
		// The family's most used word (then the shortest, then the first)
		// names the term.
		slices.SortFunc(fam, func(a, b string) int {
			if fa, fb := freq(a), freq(b); fa != fb {
				return fb - fa
			}
			if len(a) != len(b) {
				return len(a) - len(b)
			}
			return strings.Compare(a, b)
		})
		for _, w := range fam[1:] {
			delete(d.terms, w)
			d.forms[w] = fam[0]
		}
	}
	for f, l := range d.forms {
		if next, ok := d.forms[l]; ok {
			d.forms[f] = next
		}
	}
}
