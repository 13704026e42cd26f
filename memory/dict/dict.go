package dict

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strconv"
	"strings"

	"github.com/perpetuity/perpetuity/memory/text"
)

// Magic opens every dictionary file.
const Magic = "perpetuity-dictionary"

// NoTerm is the term id of a stopword, as listed by Entries.
const NoTerm uint32 = 0

// maxTerms keeps known term ids below the hashed range.
const maxTerms = 1<<31 - 1

// Dictionary maps normalized words to term ids. It is immutable after Parse
// and safe for concurrent use.
type Dictionary struct {
	Version int
	Name    string

	// ids maps every listed word to its term id; stopwords map to NoTerm.
	ids   map[string]uint32
	terms int
}

// Parse reads a dictionary file. Errors name the offending line.
func Parse(r io.Reader) (*Dictionary, error) {
	p := parser{
		d:     &Dictionary{ids: make(map[string]uint32)},
		where: make(map[string]int),
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		p.line++
		if err := p.parseLine(sc.Text()); err != nil {
			return nil, fmt.Errorf("dictionary line %d: %w", p.line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("dictionary line %d: %w", p.line+1, err)
	}
	if p.line == 0 {
		return nil, errors.New("dictionary: empty file")
	}
	if err := p.resolveForms(); err != nil {
		return nil, err
	}
	return p.d, nil
}

type parser struct {
	d       *Dictionary
	line    int
	section string
	seen    map[string]bool // sections already opened
	where   map[string]int  // word -> line that listed it
	forms   []pendingForm
}

type pendingForm struct {
	word, lemma string
	line        int
}

func (p *parser) parseLine(s string) error {
	if p.line == 1 {
		return p.parseHeader(s)
	}
	if s == "" || s[0] == '#' {
		return nil
	}
	if s[0] == '[' {
		return p.openSection(s)
	}
	switch p.section {
	case "stopwords":
		if err := p.claim(s); err != nil {
			return err
		}
		p.d.ids[s] = NoTerm
	case "terms":
		if err := p.claim(s); err != nil {
			return err
		}
		if p.d.terms == maxTerms {
			return fmt.Errorf("more than %d terms", maxTerms)
		}
		p.d.terms++
		p.d.ids[s] = uint32(p.d.terms)
	case "forms":
		word, lemma, ok := strings.Cut(s, "\t")
		if !ok || strings.Contains(lemma, "\t") {
			return fmt.Errorf("form %q: want word<TAB>lemma", s)
		}
		if err := p.claim(word); err != nil {
			return err
		}
		p.forms = append(p.forms, pendingForm{word, lemma, p.line})
	default:
		return fmt.Errorf("entry %q before any [section]", s)
	}
	return nil
}

func (p *parser) parseHeader(s string) error {
	f := strings.Split(s, "\t")
	if len(f) != 3 || f[0] != Magic {
		return fmt.Errorf("header %q: want %s<TAB>VERSION<TAB>NAME", s, Magic)
	}
	v, err := strconv.Atoi(f[1])
	if err != nil || v < 1 || v > 1<<30 {
		return fmt.Errorf("header: version %q is not a positive integer", f[1])
	}
	if strings.TrimSpace(f[2]) == "" {
		return errors.New("header: empty name")
	}
	p.d.Version, p.d.Name = v, f[2]
	return nil
}

// sectionRank orders the sections; -1 for an unknown name.
func sectionRank(name string) int {
	switch name {
	case "stopwords":
		return 0
	case "terms":
		return 1
	case "forms":
		return 2
	}
	return -1
}

func (p *parser) openSection(s string) error {
	name, ok := strings.CutPrefix(s, "[")
	name, ok2 := strings.CutSuffix(name, "]")
	at := sectionRank(name)
	if !ok || !ok2 || at < 0 {
		return fmt.Errorf("unknown section %q (want [stopwords], [terms] or [forms])", s)
	}
	if p.seen == nil {
		p.seen = make(map[string]bool)
	}
	if p.seen[name] {
		return fmt.Errorf("section [%s] opened twice", name)
	}
	if p.section != "" && sectionRank(p.section) > at {
		return fmt.Errorf("section [%s] after [%s]", name, p.section)
	}
	p.seen[name] = true
	p.section = name
	return nil
}

// claim checks that word is a single normalized token not listed before.
func (p *parser) claim(word string) error {
	if !isToken(word) {
		return fmt.Errorf("%q is not a normalized token (Normalize gives %q)", word, text.Normalize(word))
	}
	if first, dup := p.where[word]; dup {
		return fmt.Errorf("%q already listed on line %d", word, first)
	}
	p.where[word] = p.line
	return nil
}

// plainASCII is the fast path of claim: lowercase ASCII letters and digits
// (and inner apostrophes between letters) are their own normalization.
func plainASCII(w string) bool {
	if w == "" || len(w) > text.MaxTokenBytes {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '\'' && i > 0 && i+1 < len(w) && isLower(w[i-1]) && isLower(w[i+1]):
		default:
			return false
		}
	}
	return true
}

func isLower(c byte) bool { return c >= 'a' && c <= 'z' }

func (p *parser) resolveForms() error {
	for _, f := range p.forms {
		id, ok := p.d.ids[f.lemma]
		if !ok || id == NoTerm {
			return fmt.Errorf("dictionary line %d: lemma %q of %q is not a listed term", f.line, f.lemma, f.word)
		}
		p.d.ids[f.word] = id
	}
	return nil
}

// KnownTerms returns the number of known terms (ids 1..KnownTerms()).
func (d *Dictionary) KnownTerms() int { return d.terms }

// Entries yields every listed word with its term id (NoTerm for stopwords)
// in ascending word order: the rows of dictionary_entries for this version.
// Unknown words are not listed; their ids come from HashedID.
func (d *Dictionary) Entries() iter.Seq2[string, uint32] {
	return func(yield func(string, uint32) bool) {
		words := make([]string, 0, len(d.ids))
		for w := range d.ids {
			words = append(words, w)
		}
		slices.Sort(words)
		for _, w := range words {
			if !yield(w, d.ids[w]) {
				return
			}
		}
	}
}

// Len is the number of listed words (stopwords, terms and forms).
func (d *Dictionary) Len() int { return len(d.ids) }
