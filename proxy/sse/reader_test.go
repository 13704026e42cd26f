package sse

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// scriptedReader returns one chunk per Read and counts the calls, so a test
// can see whether Next read when it did not have to.
type scriptedReader struct {
	chunks [][]byte
	err    error // after the chunks; io.EOF when nil
	reads  int
}

func (r *scriptedReader) Read(b []byte) (int, error) {
	r.reads++
	if len(r.chunks) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		return 0, io.EOF
	}
	n := copy(b, r.chunks[0])
	r.chunks[0] = r.chunks[0][n:]
	if len(r.chunks[0]) == 0 {
		r.chunks = r.chunks[1:]
	}
	return n, nil
}

func readAll(r *Reader) ([]Event, error) {
	var evs []Event
	for {
		ev, err := r.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func TestReaderDoesNotReadWhenAnEventIsBuffered(t *testing.T) {
	t.Parallel()
	src := &scriptedReader{chunks: [][]byte{
		[]byte("data: 1\n\ndata: 2\n\nda"),
		[]byte("ta: 3\n\n"),
	}}
	r := NewReader(src)
	wantReads := []int{1, 1, 2}
	for i, want := range wantReads {
		ev, err := r.Next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if string(ev.Data) != string(rune('1'+i)) {
			t.Fatalf("event %d data %q", i, ev.Data)
		}
		if src.reads != want {
			t.Fatalf("after event %d: %d reads, want %d", i, src.reads, want)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("end = %v, want io.EOF", err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("end is not sticky: %v", err)
	}
}

func TestReaderEnds(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	tests := []struct {
		name   string
		chunks []string
		srcErr error
		events int
		want   error
	}{
		{"clean", []string{"data: a\n\n", "data: b\n\n"}, nil, 2, io.EOF},
		{"clean with trailing comment", []string{"data: a\n\n: bye\n"}, nil, 1, io.EOF},
		{"held CR event released at EOF", []string{"data: a\r\r"}, nil, 1, io.EOF},
		{"truncated mid event", []string{"data: a\n\nevent: x\ndata: {\"par"}, nil, 1, ErrTruncated},
		{"truncated before blank line", []string{"data: a\n"}, nil, 0, ErrTruncated},
		{"read error", []string{"data: a\n\n"}, boom, 1, boom},
		{"aborted body", []string{"data: a\n\nda"}, io.ErrUnexpectedEOF, 1, io.ErrUnexpectedEOF},
		{"too large", []string{"data: 0123456789012345678901234567890123456789\n\n"}, nil, 0, ErrEventTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := &scriptedReader{err: tt.srcErr}
			for _, c := range tt.chunks {
				src.chunks = append(src.chunks, []byte(c))
			}
			evs, err := readAll(NewReader(src, WithMaxEventSize(32)))
			if len(evs) != tt.events || !errors.Is(err, tt.want) {
				t.Fatalf("%d events, %v; want %d, %v", len(evs), err, tt.events, tt.want)
			}
		})
	}
}

func TestReaderOneByteAtATime(t *testing.T) {
	t.Parallel()
	in := []byte("event: a\r\ndata: 1\r\n\r\n: c\n\ndata: 2\n\n")
	want, _, _ := parseChunks(nil, in)
	got, err := readAll(NewReader(iotest.OneByteReader(bytes.NewReader(in))))
	if err != io.EOF || !eventsEqual(got, want) {
		t.Fatalf("got %s, %v; want %s", dump(got), err, dump(want))
	}
	got, err = readAll(NewReader(iotest.DataErrReader(bytes.NewReader(in))))
	if err != io.EOF || !eventsEqual(got, want) {
		t.Fatalf("data+EOF reader: got %s, %v", dump(got), err)
	}
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

func TestReaderStopsOnNoProgress(t *testing.T) {
	t.Parallel()
	if _, err := NewReader(zeroReader{}).Next(); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("err = %v, want io.ErrNoProgress", err)
	}
}
