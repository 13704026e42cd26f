package sse

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"
)

func addSeeds(f *testing.F, extra func(b []byte)) {
	files, _ := filepath.Glob("testdata/*.sse")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		extra(b)
	}
	for _, s := range []string{
		"", "data: x\n\n", "data: x\r\r", "data: x\r\n\r\n", ": c\n\nevent: e\n\n",
		"\xEF\xBB\xBFdata: x\n\n", "id: a\x00b\ndata: 1\n\n", "data: a\rdata: b\n\r\n",
		"data: unfinished", "\r\r\r\n\n",
	} {
		extra([]byte(s))
	}
}

// FuzzParser checks that chunking never changes the outcome: the same input
// pushed in one piece, split at any point, or byte by byte gives the same
// events, Pending state and end result, and the Raw bytes of the events are
// the stream itself.
func FuzzParser(f *testing.F) {
	addSeeds(f, func(b []byte) { f.Add(b, uint16(len(b)/2), uint16(0)) })
	f.Fuzz(func(t *testing.T, in []byte, cut uint16, max uint16) {
		var opts []Option
		if max > 0 {
			opts = []Option{WithMaxEventSize(int(max))}
		}
		c := int(cut) % (len(in) + 1)
		whole, wholePending, wholeErr := parseChunks(opts, in)
		split, splitPending, splitErr := parseChunks(opts, in[:c], in[c:])
		bytewise := make([][]byte, len(in))
		for i := range in {
			bytewise[i] = in[i : i+1]
		}
		bw, bwPending, bwErr := parseChunks(opts, bytewise...)
		if !eventsEqual(whole, split) || !eventsEqual(whole, bw) {
			t.Fatalf("chunking changed the events:\nwhole %s\nsplit %s\nbytes %s", dump(whole), dump(split), dump(bw))
		}
		if !errors.Is(splitErr, wholeErr) || !errors.Is(bwErr, wholeErr) {
			t.Fatalf("chunking changed the end: %v / %v / %v", wholeErr, splitErr, bwErr)
		}
		if wholeErr == nil && (splitPending != wholePending || bwPending != wholePending) {
			t.Fatalf("chunking changed Pending: %v / %v / %v", wholePending, splitPending, bwPending)
		}
		var joined []byte
		for _, e := range whole {
			joined = append(joined, e.Raw...)
			if e.Data != nil && len(e.Data) > len(e.Raw) {
				t.Fatalf("data longer than raw: %s", dump([]Event{e}))
			}
		}
		if !bytes.HasPrefix(in, joined) {
			t.Fatalf("joined Raw %q is not a prefix of the input", joined)
		}
		for _, e := range whole {
			if max > 0 && len(e.Raw) > int(max) {
				t.Fatalf("event of %d bytes passed a limit of %d", len(e.Raw), max)
			}
			// Writing the parsed fields and parsing again must be stable.
			again := NewParser().Push(Format(e))
			if len(again) != 1 || again[0].Event != stripBreaks(e.Event) || again[0].ID != stripBreaks(e.ID) {
				t.Fatalf("Format round trip of %s gave %s", dump([]Event{e}), dump(again))
			}
		}
	})
}

// FuzzReader checks the Reader against the Parser under several read
// patterns.
func FuzzReader(f *testing.F) {
	addSeeds(f, func(b []byte) { f.Add(b) })
	f.Fuzz(func(t *testing.T, in []byte) {
		want, _, wantEnd := parseChunks(nil, in)
		if wantEnd == nil {
			wantEnd = io.EOF
		}
		for _, src := range []io.Reader{
			bytes.NewReader(in),
			iotest.OneByteReader(bytes.NewReader(in)),
			iotest.HalfReader(bytes.NewReader(in)),
			iotest.DataErrReader(bytes.NewReader(in)),
		} {
			got, err := readAll(NewReader(src))
			if !errors.Is(err, wantEnd) || !eventsEqual(got, want) {
				t.Fatalf("reader gave %s, %v; parser %s, %v", dump(got), err, dump(want), wantEnd)
			}
		}
	})
}
