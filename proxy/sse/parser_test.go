package sse

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// parseChunks pushes the chunks in order, then ends the stream.
func parseChunks(opts []Option, chunks ...[]byte) ([]Event, bool, error) {
	p := NewParser(opts...)
	var evs []Event
	for _, c := range chunks {
		evs = append(evs, p.Push(c)...)
	}
	pending := p.Pending()
	tail, err := p.End()
	return append(evs, tail...), pending, err
}

func splits(in []byte) [][][]byte {
	var out [][][]byte
	out = append(out, [][]byte{in})
	for i := 0; i <= len(in); i++ {
		out = append(out, [][]byte{in[:i], in[i:]})
	}
	bytewise := make([][]byte, len(in))
	for i := range in {
		bytewise[i] = in[i : i+1]
	}
	out = append(out, bytewise)
	if len(in) <= 120 {
		for i := 0; i <= len(in); i++ {
			for j := i; j <= len(in); j++ {
				out = append(out, [][]byte{in[:i], in[i:j], in[j:]})
			}
		}
	}
	return out
}

// checkSplits asserts that every chunking of in yields exactly want and
// wantErr.
func checkSplits(t *testing.T, in []byte, opts []Option, want []Event, wantErr error) {
	t.Helper()
	for _, chunks := range splits(in) {
		got, _, err := parseChunks(opts, chunks...)
		if !errors.Is(err, wantErr) || (wantErr == nil && err != nil) {
			t.Fatalf("chunks %q: err = %v, want %v", chunks, err, wantErr)
		}
		if !eventsEqual(got, want) {
			t.Fatalf("chunks %q:\n got %s\nwant %s", chunks, dump(got), dump(want))
		}
	}
}

func eventsEqual(a, b []Event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Event != b[i].Event || a[i].ID != b[i].ID ||
			(a[i].Data == nil) != (b[i].Data == nil) ||
			!bytes.Equal(a[i].Data, b[i].Data) || !bytes.Equal(a[i].Raw, b[i].Raw) {
			return false
		}
	}
	return true
}

func dump(evs []Event) string {
	var b bytes.Buffer
	for _, e := range evs {
		data := "<nil>"
		if e.Data != nil {
			data = fmt.Sprintf("%q", e.Data)
		}
		fmt.Fprintf(&b, "\n  {event=%q id=%q data=%s raw=%q}", e.Event, e.ID, data, e.Raw)
	}
	return b.String()
}

func TestParserChunkingNeverChangesResult(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []Event
		err  error
	}{
		{
			name: "single data line",
			in:   "data: hello\n\n",
			want: []Event{{Data: []byte("hello"), Raw: []byte("data: hello\n\n")}},
		},
		{
			name: "data without space keeps everything after the colon",
			in:   "data:hello\n\ndata:  two spaces\n\n",
			want: []Event{
				{Data: []byte("hello"), Raw: []byte("data:hello\n\n")},
				{Data: []byte(" two spaces"), Raw: []byte("data:  two spaces\n\n")},
			},
		},
		{
			name: "multiple data lines are joined with LF",
			in:   "event: x\ndata: a\ndata:\ndata: c\n\n",
			want: []Event{{Event: "x", Data: []byte("a\n\nc"), Raw: []byte("event: x\ndata: a\ndata:\ndata: c\n\n")}},
		},
		{
			name: "CRLF endings",
			in:   "event: a\r\ndata: 1\r\n\r\nevent: b\r\ndata: 2\r\n\r\n",
			want: []Event{
				{Event: "a", Data: []byte("1"), Raw: []byte("event: a\r\ndata: 1\r\n\r\n")},
				{Event: "b", Data: []byte("2"), Raw: []byte("event: b\r\ndata: 2\r\n\r\n")},
			},
		},
		{
			name: "bare CR endings",
			in:   "data: 1\r\rdata: 2\r\r",
			want: []Event{
				{Data: []byte("1"), Raw: []byte("data: 1\r\r")},
				{Data: []byte("2"), Raw: []byte("data: 2\r\r")},
			},
		},
		{
			name: "mixed endings",
			in:   "data: a\rdata: b\n\r\ndata: c\r\n\n",
			want: []Event{
				{Data: []byte("a\nb"), Raw: []byte("data: a\rdata: b\n\r\n")},
				{Data: []byte("c"), Raw: []byte("data: c\r\n\n")},
			},
		},
		{
			name: "comment block is carried into the next event",
			in:   ": ping\n\n:another\ndata: x\n\n",
			want: []Event{{Data: []byte("x"), Raw: []byte(": ping\n\n:another\ndata: x\n\n")}},
		},
		{
			name: "stray blank lines are carried",
			in:   "\n\n\ndata: x\n\n\n\ndata: y\n\n",
			want: []Event{
				{Data: []byte("x"), Raw: []byte("\n\n\ndata: x\n\n")},
				{Data: []byte("y"), Raw: []byte("\n\ndata: y\n\n")},
			},
		},
		{
			name: "event name without data is an event",
			in:   "event: ping\n\n",
			want: []Event{{Event: "ping", Raw: []byte("event: ping\n\n")}},
		},
		{
			name: "empty data line gives empty non-nil data",
			in:   "data\n\n",
			want: []Event{{Data: []byte{}, Raw: []byte("data\n\n")}},
		},
		{
			name: "id is per event and NUL ids are ignored",
			in:   "id: 1\ndata: a\n\ndata: b\n\nid: x\x00y\ndata: c\n\n",
			want: []Event{
				{ID: "1", Data: []byte("a"), Raw: []byte("id: 1\ndata: a\n\n")},
				{Data: []byte("b"), Raw: []byte("data: b\n\n")},
				{Data: []byte("c"), Raw: []byte("id: x\x00y\ndata: c\n\n")},
			},
		},
		{
			name: "retry and unknown fields alone are not events",
			in:   "retry: 1000\nfoo: bar\n\ndata: z\nretry: 5\n\n",
			want: []Event{{Data: []byte("z"), Raw: []byte("retry: 1000\nfoo: bar\n\ndata: z\nretry: 5\n\n")}},
		},
		{
			name: "field names are case sensitive",
			in:   "Data: no\nEVENT: no\ndata: yes\n\n",
			want: []Event{{Data: []byte("yes"), Raw: []byte("Data: no\nEVENT: no\ndata: yes\n\n")}},
		},
		{
			name: "last event line wins",
			in:   "event: a\nevent: b\ndata: 1\n\n",
			want: []Event{{Event: "b", Data: []byte("1"), Raw: []byte("event: a\nevent: b\ndata: 1\n\n")}},
		},
		{
			name: "colons in the value are kept",
			in:   "data: {\"a\":\"b:c\"}\n\n",
			want: []Event{{Data: []byte(`{"a":"b:c"}`), Raw: []byte("data: {\"a\":\"b:c\"}\n\n")}},
		},
		{
			name: "leading BOM is skipped but kept in Raw",
			in:   "\xEF\xBB\xBFdata: x\n\n",
			want: []Event{{Data: []byte("x"), Raw: []byte("\xEF\xBB\xBFdata: x\n\n")}},
		},
		{
			name: "BOM later in the stream is an unknown field",
			in:   "data: x\n\n\xEF\xBB\xBFdata: y\n\n",
			want: []Event{{Data: []byte("x"), Raw: []byte("data: x\n\n")}},
		},
		{
			name: "truncated in a line",
			in:   "data: x\n\ndata: partial",
			want: []Event{{Data: []byte("x"), Raw: []byte("data: x\n\n")}},
			err:  ErrTruncated,
		},
		{
			name: "truncated before the blank line",
			in:   "data: x\n\nevent: y\ndata: z\n",
			want: []Event{{Data: []byte("x"), Raw: []byte("data: x\n\n")}},
			err:  ErrTruncated,
		},
		{
			name: "trailing comment block is a clean end",
			in:   "data: [DONE]\n\n: bye\n\n",
			want: []Event{{Data: []byte("[DONE]"), Raw: []byte("data: [DONE]\n\n")}},
		},
		{
			name: "empty input",
			in:   "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkSplits(t, []byte(tt.in), nil, tt.want, tt.err)
		})
	}
}

func TestParserRawConcatenationIsTheStream(t *testing.T) {
	t.Parallel()
	in := []byte(": hi\n\nevent: a\r\ndata: 1\r\n\r\n\n\nid: 3\rdata: 2\r\r: tail\n\n")
	evs, _, err := parseChunks(nil, in)
	if err != nil {
		t.Fatal(err)
	}
	var joined []byte
	for _, e := range evs {
		joined = append(joined, e.Raw...)
	}
	if want := in[:len(in)-len(": tail\n\n")]; !bytes.Equal(joined, want) {
		t.Fatalf("joined Raw = %q, want %q", joined, want)
	}
}

func TestParserHeldCRIsReleasedByNextByteOrEnd(t *testing.T) {
	t.Parallel()
	p := NewParser()
	if evs := p.Push([]byte("data: x\r\r")); len(evs) != 0 {
		t.Fatalf("event dispatched before its CR could be followed by LF: %s", dump(evs))
	}
	if !p.Pending() {
		t.Fatal("held event not reported as pending")
	}
	evs := p.Push([]byte("\n"))
	if len(evs) != 1 || string(evs[0].Raw) != "data: x\r\r\n" {
		t.Fatalf("got %s, want the event with its LF", dump(evs))
	}

	p = NewParser()
	p.Push([]byte("data: y\r\r"))
	evs, err := p.End()
	if err != nil || len(evs) != 1 || string(evs[0].Data) != "y" {
		t.Fatalf("End = %s, %v; want the held event and no error", dump(evs), err)
	}
}

func TestParserPending(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"", false},
		{"data: x\n\n", false},
		{": ping\n\n", false},
		{": ping\n", false},
		{"data: x\n", true},
		{"data: x", true},
		{"event: a\n", true},
		{"retry: 10\n", false},
		{": pi", true},
		{"data: x\n\r", true}, // held: a CR blank line may still get its LF
	}
	for _, tt := range tests {
		p := NewParser()
		p.Push([]byte(tt.in))
		if got := p.Pending(); got != tt.want {
			t.Errorf("Pending after %q = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParserMaxEventSize(t *testing.T) {
	t.Parallel()
	small := "data: 12345\n\n" // 13 bytes
	tests := []struct {
		name string
		max  int
		in   string
		want int // events before the error
		err  error
	}{
		{"exactly at the limit", 13, small + small, 2, nil},
		{"one byte over", 12, small, 0, ErrEventTooLarge},
		{"events before the big one survive", 13, small + "data: 123456\n\n", 1, ErrEventTooLarge},
		{"carried comments count", 13, ": c\n\n" + small, 0, ErrEventTooLarge},
		{"unterminated line over the limit", 13, small + "data: 1234567890123", 1, ErrEventTooLarge},
		{"CRLF terminator counts", 14, "data: 12345\r\n\r\n", 0, ErrEventTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, chunks := range splits([]byte(tt.in)) {
				got, _, err := parseChunks([]Option{WithMaxEventSize(tt.max)}, chunks...)
				if len(got) != tt.want || !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
					t.Fatalf("chunks %q: %d events, err %v; want %d, %v", chunks, len(got), err, tt.want, tt.err)
				}
			}
		})
	}
	p := NewParser(WithMaxEventSize(4))
	p.Push([]byte("data: 1234"))
	if !errors.Is(p.Err(), ErrEventTooLarge) {
		t.Fatalf("Err() = %v, want ErrEventTooLarge", p.Err())
	}
	if evs := p.Push([]byte("\n\ndata: 1\n\n")); evs != nil {
		t.Fatalf("parser kept going after its limit: %s", dump(evs))
	}
}

func TestParserDefaultLimit(t *testing.T) {
	t.Parallel()
	var p Parser
	big := bytes.Repeat([]byte("a"), DefaultMaxEventSize)
	p.Push([]byte("data: "))
	p.Push(big)
	if !errors.Is(p.Err(), ErrEventTooLarge) {
		t.Fatalf("zero Parser accepted %d bytes: %v", DefaultMaxEventSize+6, p.Err())
	}
}

func TestParserEventsDoNotAliasInput(t *testing.T) {
	t.Parallel()
	in := []byte("data: abc\n\n")
	p := NewParser()
	evs := p.Push(in)
	copy(in, "XXXXXXXXXXX")
	p.Push([]byte("data: zzz\n\n"))
	if string(evs[0].Data) != "abc" || string(evs[0].Raw) != "data: abc\n\n" {
		t.Fatalf("event changed after its input was reused: %s", dump(evs))
	}
	if !reflect.DeepEqual(cap(evs[0].Data), len(evs[0].Data)) {
		t.Fatalf("Data has spare capacity into Raw: cap %d len %d", cap(evs[0].Data), len(evs[0].Data))
	}
}
