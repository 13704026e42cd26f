package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/memory/dict"
)

// tinySource writes a source JSON in the package's layout for words with
// 3-dimensional vectors: components, then the norm, then the index.
func tinySource(words []string, vecs [][3]float64, edit func(i int, fields []string) []string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"precision":8,"l2NormIndex":3,"wordIndex":4,"size":%d,"dimensions":3,"words":[`, len(words))
	for i, w := range words {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q", w)
	}
	b.WriteString(`],"vectors":{`)
	for i, w := range words {
		v := vecs[i]
		n := math.Sqrt(v[0]*v[0] + v[1]*v[1] + v[2]*v[2])
		fields := []string{fmt.Sprint(v[0]), fmt.Sprint(v[1]), fmt.Sprint(v[2]), fmt.Sprint(n), fmt.Sprint(i)}
		if edit != nil {
			fields = edit(i, fields)
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q: [%s]", w, strings.Join(fields, ","))
	}
	b.WriteString(`},"unkVector":[0,0,0,0,-1]}`)
	return []byte(b.String())
}

var (
	tinyWords = []string{"the", ",", "milk", "2023", "well-known", "\"", "dairy", "café", "Caps", "guitar", "zither"}
	tinyVecs  = [][3]float64{
		{1, 0, 0}, {0, 1, 0}, {0.5, -0.25, 1}, {1, 1, 1}, {1, 2, 3}, {3, 2, 1},
		{0.4, -0.2, 0.9}, {0, 0, 2}, {2, 0, 0}, {-1, 0.1, 0}, {0.1, 0.1, 0.1},
	}
)

func TestBuild(t *testing.T) {
	t.Parallel()
	src, err := parseSource(tinySource(tinyWords, tinyVecs, nil))
	if err != nil {
		t.Fatal(err)
	}
	lex, err := dict.Builtin(2)
	if err != nil {
		t.Fatal(err)
	}
	// zither is the 11th word: beyond a cut at 10.
	f, err := build(src, lex, 3, "tiny", policy{top: 10, sif: 1e-3})
	if err != nil {
		t.Fatal(err)
	}
	// Dropped: the stopword, punctuation, the number, the hyphenated
	// compound, the quote, the capitalized form, and the word past the cut.
	if want := []string{"café", "dairy", "guitar", "milk"}; !slices.Equal(f.Words, want) {
		t.Fatalf("words %q, want %q", f.Words, want)
	}
	if want := []uint32{7, 6, 9, 2}; !slices.Equal(f.Ranks, want) {
		t.Errorf("ranks %v, want %v", f.Ranks, want)
	}
	if f.ZipfN != len(tinyWords) || f.Dims != 3 || f.Lexicon != 2 || f.Source != src.sum {
		t.Errorf("header: zipf %d dims %d lexicon %d source %s", f.ZipfN, f.Dims, f.Lexicon, f.Source)
	}
	for i, w := range f.Words {
		v := tinyVecs[slices.Index(tinyWords, w)]
		q := f.Q[i*3 : i*3+3]
		peak := slices.MaxFunc(q, func(a, b int8) int { return int(abs8(a)) - int(abs8(b)) })
		if abs8(peak) != 127 {
			t.Errorf("%s: largest component %d, want ±127", w, peak)
		}
		for d := range 3 {
			if e := math.Abs(float64(f.Scales[i])*float64(q[d]) - v[d]); e > float64(f.Scales[i])/2+1e-9 {
				t.Errorf("%s[%d]: %v dequantizes %v off, more than half a step", w, d, v[d], e)
			}
		}
	}
	if _, err := dict.NewVectors(f); err != nil {
		t.Fatalf("the built file does not load: %v", err)
	}
}

func abs8(x int8) int8 {
	if x < 0 {
		return -x
	}
	return x
}

func TestParseSourceErrors(t *testing.T) {
	t.Parallel()
	words, vecs := tinyWords[:3], tinyVecs[:3]
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"not json", []byte("{"), "unexpected end"},
		{"bad layout", []byte(`{"dimensions":3,"l2NormIndex":2,"wordIndex":4,"size":0,"words":[],"vectors":{}}`), "unexpected layout"},
		{"missing vector", []byte(`{"l2NormIndex":3,"wordIndex":4,"size":2,"dimensions":3,"words":["a","b"],"vectors":{"a":[1,0,0,1,0]}}`), "1 vectors for 2 words"},
		{"nested array", tinySource(words, vecs, func(i int, f []string) []string {
			if i == 1 {
				f[0] = "[1]"
			}
			return f
		}), "not a flat array"},
	}
	for _, tt := range tests {
		if _, err := parseSource(tt.in); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: parseSource = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

func TestSourceVectorChecks(t *testing.T) {
	t.Parallel()
	words, vecs := tinyWords[:3], tinyVecs[:3]
	tests := []struct {
		name string
		edit func(i int, f []string) []string
		want string
	}{
		{"wrong index", func(i int, f []string) []string { f[4] = "7"; return f }, "index field 7"},
		{"wrong norm", func(i int, f []string) []string { f[3] = "9"; return f }, "norm field 9"},
		{"short", func(i int, f []string) []string { return f[1:] }, "4 numbers, want 5"},
		{"not a number", func(i int, f []string) []string { f[0] = `"x"`; return f }, "invalid syntax"},
	}
	for _, tt := range tests {
		src, err := parseSource(tinySource(words, vecs, tt.edit))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if _, err := src.vector("milk", 2); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: vector = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
	src, err := parseSource(tinySource(tinyWords, tinyVecs, nil))
	if err != nil {
		t.Fatal(err)
	}
	// The quote character's key is escaped in JSON.
	if v, err := src.vector("\"", 5); err != nil || !slices.Equal(v, []float64{3, 2, 1}) {
		t.Errorf(`vector("\"") = %v, %v`, v, err)
	}
}
