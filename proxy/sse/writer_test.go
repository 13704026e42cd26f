package sse

import (
	"bytes"
	"errors"
	"testing"
)

func TestFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ev   Event
		want string
		back Event // what parsing the output gives (Raw ignored)
	}{
		{
			name: "anthropic style",
			ev:   Event{Event: "message_stop", Data: []byte(`{"type":"message_stop"}`)},
			want: "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
			back: Event{Event: "message_stop", Data: []byte(`{"type":"message_stop"}`)},
		},
		{
			name: "openai style",
			ev:   Event{Data: []byte("[DONE]")},
			want: "data: [DONE]\n\n",
			back: Event{Data: []byte("[DONE]")},
		},
		{
			name: "multi-line data",
			ev:   Event{Data: []byte("a\nb\r\nc\rd\n")},
			want: "data: a\ndata: b\ndata: c\ndata: d\ndata:\n\n",
			back: Event{Data: []byte("a\nb\nc\nd\n")},
		},
		{
			name: "leading space survives",
			ev:   Event{Data: []byte(" x")},
			want: "data:  x\n\n",
			back: Event{Data: []byte(" x")},
		},
		{
			name: "id",
			ev:   Event{Event: "e", ID: "42", Data: []byte("d")},
			want: "event: e\nid: 42\ndata: d\n\n",
			back: Event{Event: "e", ID: "42", Data: []byte("d")},
		},
		{
			name: "name only",
			ev:   Event{Event: "ping"},
			want: "event: ping\n\n",
			back: Event{Event: "ping"},
		},
		{
			name: "empty event still dispatches",
			ev:   Event{},
			want: "data:\n\n",
			back: Event{Data: []byte{}},
		},
		{
			name: "line breaks cannot inject fields",
			ev:   Event{Event: "x\ndata: evil", ID: "1\r\n", Data: []byte("ok")},
			want: "event: xdata: evil\nid: 1\ndata: ok\n\n",
			back: Event{Event: "xdata: evil", ID: "1", Data: []byte("ok")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Format(tt.ev)
			if string(got) != tt.want {
				t.Fatalf("Format = %q, want %q", got, tt.want)
			}
			evs := NewParser().Push(got)
			want := tt.back
			want.Raw = got
			if !eventsEqual(evs, []Event{want}) {
				t.Fatalf("round trip: %s, want %s", dump(evs), dump([]Event{want}))
			}
		})
	}
}

type failWriter struct{ calls int }

func (w *failWriter) Write(b []byte) (int, error) {
	w.calls++
	return 0, errors.New("closed")
}

func TestWrite(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := Write(&b, Event{Event: "a", Data: []byte("1\n2")}); err != nil {
		t.Fatal(err)
	}
	if b.String() != "event: a\ndata: 1\ndata: 2\n\n" {
		t.Fatalf("wrote %q", b.String())
	}
	fw := &failWriter{}
	if err := Write(fw, Event{Data: []byte("x\ny")}); err == nil || fw.calls != 1 {
		t.Fatalf("err %v after %d writes; want an error from one write", err, fw.calls)
	}
}
