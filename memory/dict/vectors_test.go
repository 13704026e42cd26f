package dict

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// The shipped vector file's facts, as the package doc states them.
const (
	vectorsVersion = 3
	vectorsWords   = 49198
	vectorsDims    = 100
)

func builtinVectors(t testing.TB) *Vectors {
	t.Helper()
	v, err := BuiltinVectors(vectorsVersion)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestBuiltinVectors checks that the committed file loads, says what the
// package doc says, and makes sense: related words score above unrelated
// ones.
func TestBuiltinVectors(t *testing.T) {
	t.Parallel()
	v := builtinVectors(t)
	t.Logf("v%d %q: %d words of %d dimensions (load time and bytes: go test -bench BuiltinVectors)", v.Version, v.Name, v.Len(), v.Dims)
	if v.Version != vectorsVersion || v.Len() != vectorsWords || v.Dims != vectorsDims || v.Lexicon != 2 {
		t.Fatalf("version %d, %d words, %d dims, lexicon %d; want %d, %d, %d, 2",
			v.Version, v.Len(), v.Dims, v.Lexicon, vectorsVersion, vectorsWords, vectorsDims)
	}
	if _, err := BuiltinVectors(999); err == nil {
		t.Error("BuiltinVectors(999) did not fail")
	}

	// Each row: a word, one close in meaning, one unrelated. GloVe's
	// cosines, measured once: the related one is well above 0.5, the
	// unrelated one near 0.
	tests := []struct{ word, related, unrelated string }{
		{"dairy", "milk", "guitar"},
		{"cat", "kitten", "volcano"},
		{"cats", "pets", "spreadsheet"},
		{"allergic", "allergy", "guitar"},
		{"adoption", "adopt", "volcano"},
		{"shelter", "rescue", "spreadsheet"},
		{"hiking", "camping", "tax"},
		{"nurse", "hospital", "volcano"},
		{"pottery", "ceramics", "election"},
		{"divorce", "marriage", "volcano"},
		{"sunset", "beach", "spreadsheet"},
		{"guitar", "violin", "dairy"},
	}
	for _, tt := range tests {
		rel, ok1 := v.Similarity(tt.word, tt.related)
		unrel, ok2 := v.Similarity(tt.word, tt.unrelated)
		if !ok1 || !ok2 {
			t.Errorf("%s, %s or %s has no vector", tt.word, tt.related, tt.unrelated)
			continue
		}
		t.Logf("%s~%s %.3f, %s~%s %.3f", tt.word, tt.related, rel, tt.word, tt.unrelated, unrel)
		if rel < 0.5 || unrel > 0.3 || rel-unrel < 0.3 {
			t.Errorf("%s~%s = %.3f, %s~%s = %.3f: want related >= 0.5, unrelated <= 0.3, 0.3 apart",
				tt.word, tt.related, rel, tt.word, tt.unrelated, unrel)
		}
	}
	if s, ok := v.Similarity("milk", "milk"); !ok || s < 0.9999 {
		t.Errorf("milk~milk = %v, %v", s, ok)
	}
}

// TestBuiltinVectorsRows checks every row: a stored token that is neither a
// stopword of its lexicon nor a number, a sane norm, a SIF weight that
// falls as the word gets more frequent.
func TestBuiltinVectorsRows(t *testing.T) {
	t.Parallel()
	v := builtinVectors(t)
	lex, err := Builtin(v.Lexicon)
	if err != nil {
		t.Fatal(err)
	}
	var norms []float64
	type byRank struct {
		rank   uint32
		weight float32
	}
	var weights []byRank
	for w := range v.rows {
		if !isToken(w) {
			t.Errorf("%q is not a stored token", w)
		}
		if _, ok := lex.Lookup(w); !ok {
			t.Errorf("%q is a stopword of lexicon v%d", w, lex.Version)
		}
		if strings.Trim(w, "0123456789.") == "" {
			t.Errorf("%q is a number", w)
		}
		wv, ok := v.Lookup(w)
		if !ok || len(wv.Q) != v.Dims {
			t.Fatalf("Lookup(%q) = %d components, %v", w, len(wv.Q), ok)
		}
		norms = append(norms, wv.Norm())
		weights = append(weights, byRank{wv.Rank, wv.Weight})
		if !(wv.Weight > 0 && wv.Weight <= 1) {
			t.Errorf("%q: SIF weight %v outside (0, 1]", w, wv.Weight)
		}
	}
	slices.Sort(norms)
	lo, med, hi := norms[0], norms[len(norms)/2], norms[len(norms)-1]
	t.Logf("norms: min %.2f, median %.2f, max %.2f", lo, med, hi)
	// GloVe's 100-dimensional vectors are 2 to 12 long, frequent words
	// longer than rare ones; a scale or sign mistake would show here.
	if lo < 1 || med < 3 || med > 8 || hi > 15 {
		t.Errorf("norms min %.2f median %.2f max %.2f: want within 1..15, median 3..8", lo, med, hi)
	}
	slices.SortFunc(weights, func(a, b byRank) int { return int(a.rank) - int(b.rank) })
	for i := 1; i < len(weights); i++ {
		if weights[i].weight < weights[i-1].weight {
			t.Fatalf("rank %d weighs %v, less than rank %d's %v", weights[i].rank, weights[i].weight, weights[i-1].rank, weights[i-1].weight)
		}
	}
	if first, last := weights[0].weight, weights[len(weights)-1].weight; first > 0.5 || last < 0.9 {
		t.Errorf("SIF weights run from %v (most frequent) to %v (rarest): want below 0.5 and above 0.9", first, last)
	}
}

func TestVectorsLookup(t *testing.T) {
	t.Parallel()
	v := builtinVectors(t)
	tests := []struct {
		token, same string
		ok          bool
	}{
		{"caroline's", "caroline", true},
		{"milk", "milk", true},
		{"the", "", false},      // stopword
		{"2023", "", false},     // number
		{"zsombor", "", false},  // beyond the frequency cut
		{"xqzvvk's", "", false}, // unknown, possessive or not
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := v.Lookup(tt.token)
		if ok != tt.ok {
			t.Errorf("Lookup(%q) ok = %v, want %v", tt.token, ok, tt.ok)
			continue
		}
		if ok {
			want, _ := v.Lookup(tt.same)
			if !slices.Equal(got.Q, want.Q) || got.Scale != want.Scale {
				t.Errorf("Lookup(%q) differs from Lookup(%q)", tt.token, tt.same)
			}
		}
	}
	if _, ok := v.Similarity("milk", "the"); ok {
		t.Error("Similarity with a stopword reported ok")
	}
}

// smallVectors is a valid file of three words in four dimensions.
func smallVectors() *VectorFile {
	return &VectorFile{
		Version: 3, Name: "test-small", Lexicon: 2, Dims: 4, ZipfN: 10, SIF: 1e-3,
		Source: strings.Repeat("ab", 32),
		Words:  []string{"café", "milk", "milky"},
		Ranks:  []uint32{9, 0, 4},
		Scales: []float32{0.5, 0.01, 2},
		Q:      []int8{127, 0, -127, 5, 1, 2, 3, 4, -1, -2, -3, -4},
	}
}

func writeVectors(t testing.TB, f *VectorFile) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteVectors(&b, f); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestVectorFileRoundTrip(t *testing.T) {
	t.Parallel()
	f := smallVectors()
	raw := writeVectors(t, f)
	if again := writeVectors(t, f); !bytes.Equal(raw, again) {
		t.Fatal("WriteVectors is not deterministic")
	}
	got, err := ParseVectors(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != f.Version || got.Name != f.Name || got.Lexicon != f.Lexicon || got.Dims != f.Dims ||
		got.ZipfN != f.ZipfN || got.SIF != f.SIF || got.Source != f.Source ||
		!slices.Equal(got.Words, f.Words) || !slices.Equal(got.Ranks, f.Ranks) ||
		!slices.Equal(got.Scales, f.Scales) || !slices.Equal(got.Q, f.Q) {
		t.Fatalf("round trip changed the file:\n got %+v\nwant %+v", got, f)
	}
	v, err := NewVectors(got)
	if err != nil {
		t.Fatal(err)
	}
	wv, ok := v.Lookup("milky")
	if !ok || wv.Scale != 2 || wv.Rank != 4 || !slices.Equal(wv.Q, []int8{-1, -2, -3, -4}) {
		t.Fatalf("Lookup(milky) = %+v, %v", wv, ok)
	}
	if s, _ := v.Similarity("milk", "milky"); s > -0.9999 {
		t.Errorf("milk~milky = %v, want -1 (opposite vectors)", s)
	}
}

// rawVectors writes a file with the given header fields after the version
// and name, and a correct body checksum, whatever the body says.
func rawVectors(fields string, body []byte) []byte {
	var b bytes.Buffer
	b.WriteString(VectorMagic + "\t3\ttest\t" + fields + "\tbody=sha256:" + sha256Hex(body) + "\n")
	b.Write(body)
	return b.Bytes()
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestParseVectorsErrors(t *testing.T) {
	t.Parallel()
	good := writeVectors(t, smallVectors())
	header, body, _ := bytes.Cut(good, []byte("\n"))
	const fields = "lexicon=2\tdims=4\twords=3\tzipf=10\tsif=0.001\tsource=sha256:" +
		"abababababababababababababababababababababababababababababababab"
	unsorted := smallVectors()
	unsorted.Words = []string{"milk", "café", "milky"}
	badScale := smallVectors()
	badScale.Scales[1] = 0
	badRank := smallVectors()
	badRank.Ranks[0] = 10
	badWord := smallVectors()
	badWord.Words[0] = "Café"
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "vectors header: no header line"},
		{"no newline", header, "vectors header: no header line"},
		{"bad magic", append([]byte("vectors"), good[len(VectorMagic):]...), "want perpetuity-vectors"},
		{"field order", rawVectors(strings.Replace(fields, "lexicon=2\tdims=4", "dims=4\tlexicon=2", 1), body), "field 4"},
		{"bad version", bytes.Replace(good, []byte("\t3\t"), []byte("\tthree\t"), 1), "version \"three\" is not an integer"},
		{"padded version", bytes.Replace(good, []byte("\t3\t"), []byte("\t03\t"), 1), "version \"03\" is not an integer in canonical form"},
		{"sif spelled otherwise", rawVectors(strings.Replace(fields, "sif=0.001", "sif=1e-3", 1), body), "sif \"1e-3\""},
		{"too many dims", rawVectors(strings.Replace(fields, "dims=4", "dims=5000", 1), body), "5000 dimensions"},
		{"zero words", rawVectors(strings.Replace(fields, "words=3", "words=0", 1), body), "words \"0\""},
		{"bad sif", rawVectors(strings.Replace(fields, "sif=0.001", "sif=x", 1), body), "sif \"x\""},
		{"sif out of range", rawVectors(strings.Replace(fields, "sif=0.001", "sif=2", 1), body), "SIF constant 2"},
		{"bad source", rawVectors(strings.Replace(fields, "source=sha256:", "source=md5:", 1), body), "source \"md5:"},
		{"bad checksum", append(bytes.Clone(good[:len(good)-1]), good[len(good)-1]^1), "SHA-256"},
		{"truncated", good[:len(good)-3], "SHA-256"},
		{"short body", rawVectors(fields, body[:len(body)-3]), "bytes after the words"},
		{"long body", rawVectors(fields, append(bytes.Clone(body), 0)), "bytes after the words"},
		{"cut word", rawVectors(fields, body[:5]), "word 0 cut short"},
		{"cut second word", rawVectors(fields, body[:9]), "word 1 cut short"},
		{"bad prefix", rawVectors(fields, append([]byte{9, 1, 'x'}, body[3:]...)), "word 0 shares 9 bytes"},
		{"short prefix", rawVectors(fields, shortPrefix(body)), "does not share the longest prefix"},
		{"unsorted", rawVectors(fields, unsorted.encodeBody()), "does not follow"},
		{"zero scale", rawVectors(fields, badScale.encodeBody()), "scale 0"},
		{"rank too high", rawVectors(fields, badRank.encodeBody()), "rank 10"},
		{"not a token", rawVectors(fields, badWord.encodeBody()), "not a normalized token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseVectors(bytes.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseVectors = %v, want an error containing %q", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "vectors") {
				t.Errorf("error without context: %v", err)
			}
		})
	}
}

// shortPrefix re-encodes the second word of smallVectors' body ("milk"
// after "café") as if it shared one byte less than it does, which would
// decode to the same word.
func shortPrefix(body []byte) []byte {
	// café: 0 5 c a f é(2 bytes); milk: 0 4 m i l k; milky: 4 1 y.
	i := 2 + 5 + 2 + 4
	out := bytes.Clone(body[:i])
	out = append(out, 3, 2, 'k', 'y')
	return append(out, body[i+3:]...)
}

func TestWriteVectorsRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*VectorFile)
		want   string
	}{
		{"name with tab", func(f *VectorFile) { f.Name = "a\tb" }, "name"},
		{"short source", func(f *VectorFile) { f.Source = "abc" }, "source checksum"},
		{"missing scales", func(f *VectorFile) { f.Scales = f.Scales[:2] }, "2 scales"},
		{"duplicate word", func(f *VectorFile) { f.Words[2] = "milk" }, "does not follow"},
		{"zipf below words", func(f *VectorFile) { f.ZipfN = 2 }, "smaller than"},
	}
	for _, tt := range tests {
		f := smallVectors()
		tt.change(f)
		if err := WriteVectors(&bytes.Buffer{}, f); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: WriteVectors = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

// FuzzParseVectors: any input either fails with context or parses into a
// file that writes back to the very same bytes.
func FuzzParseVectors(f *testing.F) {
	good := writeVectors(f, smallVectors())
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte(VectorMagic + "\t3\tx\tlexicon=2\tdims=1\twords=1\tzipf=1\tsif=0.5\tsource=sha256:\tbody=sha256:\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		vf, err := ParseVectors(bytes.NewReader(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "vectors") {
				t.Fatalf("error without context: %v", err)
			}
			return
		}
		var out bytes.Buffer
		if err := WriteVectors(&out, vf); err != nil {
			t.Fatalf("a parsed file does not write: %v", err)
		}
		if !bytes.Equal(out.Bytes(), in) {
			t.Fatalf("parse and write changed the bytes")
		}
	})
}

// BenchmarkBuiltinVectors is the start-up cost of the shipped vectors: its
// B/op is what one load allocates, MB-kept what stays on the heap (the
// components, ranks, weights, scales and the word index).
func BenchmarkBuiltinVectors(b *testing.B) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := builtinVectors(b)
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	b.ReportAllocs()
	for b.Loop() {
		builtinVectors(b)
	}
	// After the loop: b.Loop resets the timer, which drops reported metrics.
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "MB-kept")
}

func BenchmarkVectorsLookup(b *testing.B) {
	v := builtinVectors(b)
	words := []string{"dairy", "caroline's", "the", "hiking", "zsombor"}
	b.ReportAllocs()
	for b.Loop() {
		for _, w := range words {
			v.Lookup(w)
		}
	}
}
