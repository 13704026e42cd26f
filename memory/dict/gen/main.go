// Command gen generates a shipped dictionary file (memory/dict/data/vN.tsv)
// from sources that Debian packages: WordNet 3.0 (package wordnet-base, for
// lemmas, parts of speech, sense counts and irregular forms) and the SCOWL
// American English word list (package wamerican-large, to keep only
// inflections that real English attests). Stopwords are curated in this
// program (stopwords.go).
//
// Regenerate the shipped versions from the repository root:
//
//	apt-get install wordnet-base wamerican-large
//	go run ./memory/dict/gen -version 1 -out memory/dict/data/v1.tsv
//	go run ./memory/dict/gen -version 2 -out memory/dict/data/v2.tsv
//
// Output is deterministic: the same inputs give the same bytes.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/text"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.wordnet, "wordnet", "/usr/share/wordnet", "WordNet 3.0 database directory (Debian wordnet-base)")
	flag.StringVar(&cfg.words, "words", "/usr/share/dict/american-english-large", "word list that attests inflected forms (Debian wamerican-large)")
	flag.IntVar(&cfg.version, "version", 1, "dictionary version to generate")
	flag.StringVar(&cfg.out, "out", "", "output file (default: stdout)")
	cfg.policy = defaultPolicy()
	flag.StringVar(&cfg.policy.conflict, "conflict", cfg.policy.conflict, "forms that are also lemmas: never, freq or always map to the base")
	flag.BoolVar(&cfg.policy.listBases, "list-bases", cfg.policy.listBases, "also inflect word-list words that WordNet lacks")
	flag.IntVar(&cfg.policy.maxFamily, "max-family", cfg.policy.maxFamily, "v2: largest derivational family merged into one term")
	flag.Parse()
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

type config struct {
	wordnet, words, out string
	version             int
	policy              policy
}

func run(cfg config) error {
	if cfg.version != 1 && cfg.version != 2 {
		return fmt.Errorf("version %d: this generator knows versions 1 and 2", cfg.version)
	}
	src, err := load(cfg.wordnet, cfg.words)
	if err != nil {
		return err
	}
	d := buildV1(src, cfg.policy)
	if cfg.version == 2 {
		links, err := derivLinks(cfg.wordnet)
		if err != nil {
			return err
		}
		addDerivations(d, src, links, cfg.policy.maxFamily)
		d.name = "en-wordnet-scowl-v2"
	}
	w := io.Writer(os.Stdout)
	if cfg.out != "" {
		f, err := os.Create(cfg.out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriter(w)
	if err := d.write(bw, cfg.version); err != nil {
		return err
	}
	return bw.Flush()
}

// Parts of speech, as WordNet names its files.
const (
	noun = iota
	verb
	adj
	adv
	nPOS
)

func posName(pos int) string {
	return [nPOS]string{"noun", "verb", "adj", "adv"}[pos]
}

type sources struct {
	// tagged[w][pos] is WordNet's tagsense_cnt + 1 for lemma w in that part
	// of speech (0: not a lemma there): a usage frequency from the tagged
	// Brown corpus, plus one so every lemma is nonzero.
	tagged map[string]*[nPOS]int
	// exc lists irregular (form, base) pairs per part of speech.
	exc [nPOS][][2]string
	// attested holds the word list's words (lowercased, possessives
	// dropped).
	attested map[string]bool
}

// single reports whether w is one stored token (text.Normalize's output).
func single(w string) bool {
	t := text.Normalize(w)
	return len(t) == 1 && t[0] == w
}

func load(wordnetDir, wordsFile string) (*sources, error) {
	src := &sources{tagged: make(map[string]*[nPOS]int), attested: make(map[string]bool)}
	for pos := range nPOS {
		name := posName(pos)
		if err := eachLine(filepath.Join(wordnetDir, "index."+name), func(line string) {
			if strings.HasPrefix(line, " ") {
				return // licence header
			}
			f := strings.Fields(line)
			if len(f) < 4 || !single(f[0]) {
				return
			}
			// lemma pos synset_cnt p_cnt [ptr...] sense_cnt tagsense_cnt offsets...
			p, _ := strconv.Atoi(f[3])
			if 4+p+1 >= len(f) {
				return
			}
			tc, _ := strconv.Atoi(f[4+p+1])
			e := src.tagged[f[0]]
			if e == nil {
				e = new([nPOS]int)
				src.tagged[f[0]] = e
			}
			e[pos] = tc + 1
		}); err != nil {
			return nil, err
		}
		if err := eachLine(filepath.Join(wordnetDir, name+".exc"), func(line string) {
			f := strings.Fields(line)
			if len(f) >= 2 && single(f[0]) && single(f[1]) && f[0] != f[1] {
				src.exc[pos] = append(src.exc[pos], [2]string{f[0], f[1]})
			}
		}); err != nil {
			return nil, err
		}
	}
	if err := eachLine(wordsFile, func(line string) {
		w := strings.ToLower(strings.TrimSpace(line))
		if strings.HasSuffix(w, "'s") || !single(w) {
			return
		}
		src.attested[w] = true
	}); err != nil {
		return nil, err
	}
	if len(src.tagged) == 0 || len(src.attested) == 0 {
		return nil, fmt.Errorf("no words read from %s or %s", wordnetDir, wordsFile)
	}
	return src, nil
}

func eachLine(path string, fn func(string)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		fn(sc.Text())
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// dictionary is the generated content before it is written.
type dictionary struct {
	name  string
	stop  map[string]bool
	terms map[string]bool
	forms map[string]string // form -> lemma (a term)
}

func (d *dictionary) write(w io.Writer, version int) error {
	fmt.Fprintf(w, "%s\t%d\t%s\n", dict.Magic, version, d.name)
	fmt.Fprintf(w, "# Generated by memory/dict/gen from WordNet 3.0 (wordnet-base) and SCOWL\n")
	fmt.Fprintf(w, "# (wamerican-large); do not edit by hand. %d stopwords, %d terms, %d forms.\n",
		len(d.stop), len(d.terms), len(d.forms))
	fmt.Fprintln(w, "[stopwords]")
	for _, s := range sortedKeys(d.stop) {
		fmt.Fprintln(w, s)
	}
	fmt.Fprintln(w, "[terms]")
	for _, s := range sortedKeys(d.terms) {
		fmt.Fprintln(w, s)
	}
	fmt.Fprintln(w, "[forms]")
	for _, s := range sortedKeys(d.forms) {
		if _, err := fmt.Fprintf(w, "%s\t%s\n", s, d.forms[s]); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
