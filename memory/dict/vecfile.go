package dict

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/perpetuity/perpetuity/memory/text"
)

// VectorMagic opens every vector file.
const VectorMagic = "perpetuity-vectors"

// Bounds a vector file must respect, so a corrupt header cannot make the
// parser allocate without limit.
const (
	maxVectorWords = 1 << 22
	maxVectorDims  = 1024
)

// VectorFile is the content of a word-vector file (the format is in the
// package doc). Words ascend in byte order; entry i of Ranks and Scales and
// Q[i*Dims:(i+1)*Dims] belong to Words[i].
type VectorFile struct {
	Version int
	Name    string
	// Lexicon is the version of the lexical dictionary whose Lookup the
	// words were grouped by: the vectors serve only that lexicon.
	Lexicon int
	Dims    int
	// ZipfN is the size of the source vocabulary the ranks count in.
	ZipfN int
	// SIF is the smoothing constant a of the SIF weight a/(a+p(w)).
	SIF float64
	// Source is the SHA-256 of the source file the vectors were built
	// from, in hex: what a regeneration must read to give the same bytes.
	Source string
	Words  []string
	Ranks  []uint32
	Scales []float32
	Q      []int8
}

// WriteVectors writes f in the vector file format. The output depends on
// f alone, byte for byte.
func WriteVectors(w io.Writer, f *VectorFile) error {
	if err := f.check(); err != nil {
		return err
	}
	body := f.encodeBody()
	sum := sha256.Sum256(body)
	header := fmt.Sprintf("%s\t%d\t%s\tlexicon=%d\tdims=%d\twords=%d\tzipf=%d\tsif=%s\tsource=sha256:%s\tbody=sha256:%s\n",
		VectorMagic, f.Version, f.Name, f.Lexicon, f.Dims, len(f.Words), f.ZipfN,
		strconv.FormatFloat(f.SIF, 'g', -1, 64), f.Source, hex.EncodeToString(sum[:]))
	if _, err := io.WriteString(w, header); err != nil {
		return err
	}
	_, err := w.Write(body)
	return err
}

// encodeBody lays the sections out one after another: front-coded words,
// ranks, scales, vectors.
func (f *VectorFile) encodeBody() []byte {
	n := len(f.Words)
	var b bytes.Buffer
	b.Grow(n * (f.Dims + 16))
	prev := ""
	for _, w := range f.Words {
		p := commonPrefix(prev, w)
		b.WriteByte(byte(p))
		b.WriteByte(byte(len(w) - p))
		b.WriteString(w[p:])
		prev = w
	}
	var u [4]byte
	for _, r := range f.Ranks {
		binary.LittleEndian.PutUint32(u[:], r)
		b.Write(u[:])
	}
	for _, s := range f.Scales {
		binary.LittleEndian.PutUint32(u[:], math.Float32bits(s))
		b.Write(u[:])
	}
	for _, q := range f.Q {
		b.WriteByte(byte(q))
	}
	return b.Bytes()
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// check validates everything but the checksums: what WriteVectors refuses
// to write and ParseVectors refuses to return.
func (f *VectorFile) check() error {
	n := len(f.Words)
	switch {
	case f.Version < 1 || f.Version > 1<<30:
		return fmt.Errorf("vectors: version %d is not a positive integer", f.Version)
	case f.Lexicon < 1 || f.Lexicon > 1<<30:
		return fmt.Errorf("vectors: lexicon version %d is not a positive integer", f.Lexicon)
	case f.Name == "" || strings.ContainsAny(f.Name, "\t\n\r") || strings.TrimSpace(f.Name) != f.Name:
		return fmt.Errorf("vectors: name %q must be non-empty, without tabs, newlines or outer spaces", f.Name)
	case f.Dims < 1 || f.Dims > maxVectorDims:
		return fmt.Errorf("vectors: %d dimensions (want 1..%d)", f.Dims, maxVectorDims)
	case n < 1 || n > maxVectorWords:
		return fmt.Errorf("vectors: %d words (want 1..%d)", n, maxVectorWords)
	case f.ZipfN < n:
		return fmt.Errorf("vectors: source vocabulary %d is smaller than the %d words kept", f.ZipfN, n)
	case !(f.SIF > 0 && f.SIF < 1):
		return fmt.Errorf("vectors: SIF constant %v is not in (0, 1)", f.SIF)
	case len(f.Source) != 64 || strings.Trim(f.Source, "0123456789abcdef") != "":
		return fmt.Errorf("vectors: source checksum %q is not 64 lowercase hex digits", f.Source)
	case len(f.Ranks) != n || len(f.Scales) != n || len(f.Q) != n*f.Dims:
		return fmt.Errorf("vectors: %d words but %d ranks, %d scales, %d components", n, len(f.Ranks), len(f.Scales), len(f.Q))
	}
	for i, w := range f.Words {
		if !isToken(w) {
			return fmt.Errorf("vectors: word %d %q is not a normalized token", i, w)
		}
		if i > 0 && f.Words[i-1] >= w {
			return fmt.Errorf("vectors: word %d %q does not follow %q in byte order", i, w, f.Words[i-1])
		}
		if int64(f.Ranks[i]) >= int64(f.ZipfN) {
			return fmt.Errorf("vectors: %q has rank %d, not below the source vocabulary %d", w, f.Ranks[i], f.ZipfN)
		}
		if s := f.Scales[i]; !(s > 0) || math.IsInf(float64(s), 0) {
			return fmt.Errorf("vectors: %q has scale %v (want a positive finite number)", w, s)
		}
	}
	return nil
}

// vectorHeaderKeys are the header's key=value fields, in their order.
var vectorHeaderKeys = [...]string{"lexicon", "dims", "words", "zipf", "sif", "source", "body"}

// ParseVectors reads a vector file, verifying its body checksum and every
// field. Errors say which part is wrong.
func ParseVectors(r io.Reader) (*VectorFile, error) {
	raw, err := io.ReadAll(io.LimitReader(r, maxVectorFile+1))
	if err != nil {
		return nil, fmt.Errorf("vectors: %w", err)
	}
	if len(raw) > maxVectorFile {
		return nil, fmt.Errorf("vectors: file longer than %d bytes", maxVectorFile)
	}
	return parseVectorBytes(raw)
}

// maxVectorFile bounds what ParseVectors reads: a shipped file is a few
// megabytes.
const maxVectorFile = 1 << 30

// parseVectorBytes is ParseVectors on bytes already read; the result does
// not alias raw.
func parseVectorBytes(raw []byte) (*VectorFile, error) {
	line, body, ok := bytes.Cut(raw, []byte("\n"))
	if !ok {
		return nil, errors.New("vectors header: no header line")
	}
	fields := strings.Split(string(line), "\t")
	if len(fields) != 3+len(vectorHeaderKeys) || fields[0] != VectorMagic {
		return nil, fmt.Errorf("vectors header %.80q: want %s<TAB>VERSION<TAB>NAME then %s as key=value", line, VectorMagic, strings.Join(vectorHeaderKeys[:], ", "))
	}
	f := &VectorFile{Name: fields[2]}
	vals := make(map[string]string, len(vectorHeaderKeys))
	for i, k := range vectorHeaderKeys {
		v, ok := strings.CutPrefix(fields[3+i], k+"=")
		if !ok {
			return nil, fmt.Errorf("vectors header: field %d is %.40q, want %s=...", 4+i, fields[3+i], k)
		}
		vals[k] = v
	}
	vals["version"] = fields[1]
	var err error
	for _, it := range []struct {
		key string
		dst *int
	}{{"version", &f.Version}, {"lexicon", &f.Lexicon}, {"dims", &f.Dims}, {"zipf", &f.ZipfN}} {
		if *it.dst, err = strconv.Atoi(vals[it.key]); err != nil || strconv.Itoa(*it.dst) != vals[it.key] {
			return nil, fmt.Errorf("vectors header: %s %q is not an integer in canonical form", it.key, vals[it.key])
		}
	}
	n, err := strconv.Atoi(vals["words"])
	if err != nil || n < 1 || n > maxVectorWords || strconv.Itoa(n) != vals["words"] {
		return nil, fmt.Errorf("vectors header: words %q is not a count in 1..%d", vals["words"], maxVectorWords)
	}
	if f.Dims < 1 || f.Dims > maxVectorDims {
		return nil, fmt.Errorf("vectors header: %d dimensions (want 1..%d)", f.Dims, maxVectorDims)
	}
	// Numbers must be written as WriteVectors writes them, so a file has
	// one spelling and its bytes are its identity.
	if f.SIF, err = strconv.ParseFloat(vals["sif"], 64); err != nil || strconv.FormatFloat(f.SIF, 'g', -1, 64) != vals["sif"] {
		return nil, fmt.Errorf("vectors header: sif %q is not a number in canonical form", vals["sif"])
	}
	if f.Source, ok = strings.CutPrefix(vals["source"], "sha256:"); !ok {
		return nil, fmt.Errorf("vectors header: source %q is not sha256:HEX", vals["source"])
	}
	wantSum, ok := strings.CutPrefix(vals["body"], "sha256:")
	if !ok {
		return nil, fmt.Errorf("vectors header: body %q is not sha256:HEX", vals["body"])
	}
	if sum := sha256.Sum256(body); hex.EncodeToString(sum[:]) != wantSum {
		return nil, fmt.Errorf("vectors body: SHA-256 is %x, the header says %s (file damaged or truncated)", sum, wantSum)
	}
	if err := f.decodeBody(body, n); err != nil {
		return nil, err
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *VectorFile) decodeBody(b []byte, n int) error {
	f.Words = make([]string, n)
	prev := ""
	at := 0
	for i := range n {
		if at+2 > len(b) {
			return fmt.Errorf("vectors body: word %d cut short", i)
		}
		p, s := int(b[at]), int(b[at+1])
		at += 2
		if p > len(prev) {
			return fmt.Errorf("vectors body: word %d shares %d bytes with a %d-byte word", i, p, len(prev))
		}
		if at+s > len(b) {
			return fmt.Errorf("vectors body: word %d cut short", i)
		}
		w := prev[:p] + string(b[at:at+s])
		if commonPrefix(prev, w) != p {
			return fmt.Errorf("vectors body: word %d %q does not share the longest prefix with %q", i, w, prev)
		}
		at += s
		f.Words[i] = w
		prev = w
	}
	rest := b[at:]
	if want := n * (8 + f.Dims); len(rest) != want {
		return fmt.Errorf("vectors body: %d bytes after the words, want %d for %d words of %d dimensions", len(rest), want, n, f.Dims)
	}
	f.Ranks = make([]uint32, n)
	f.Scales = make([]float32, n)
	for i := range n {
		f.Ranks[i] = binary.LittleEndian.Uint32(rest[4*i:])
		f.Scales[i] = math.Float32frombits(binary.LittleEndian.Uint32(rest[4*(n+i):]))
	}
	q := rest[8*n:]
	f.Q = make([]int8, len(q))
	for i, c := range q {
		f.Q[i] = int8(c)
	}
	return nil
}

// isToken reports whether w is one stored token (text.Normalize's output).
func isToken(w string) bool {
	if plainASCII(w) {
		return true
	}
	toks := text.Normalize(w)
	return len(toks) == 1 && toks[0] == w
}
