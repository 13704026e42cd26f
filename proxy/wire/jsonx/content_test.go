package jsonx

import (
	"bytes"
	"testing"
)

type contentPiece struct {
	Text string `json:"text"`
}

func TestContent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		str     bool // the string form is set
		items   int  // -1: the array form is not set
		out     string
		wantErr string // "*": any error (encoding/json's own wording)
	}{
		{"null", `null`, false, -1, `null`, ""},
		{"string", ` "hi <b>"`, true, -1, `"hi <b>"`, ""},
		{"empty array stays an array", "\n[]", false, 0, `[]`, ""},
		{"array", `[{"text":"a"},{"text":"b"}]`, false, 2, `[{"text":"a"},{"text":"b"}]`, ""},
		{"number", `5`, false, -1, "", "content: want string, array or null, got 5"},
		{"object", `{"text":"a"}`, false, -1, "", `content: want string, array or null, got {"text":"a"}`},
		{"bad element", `[{"text":1}]`, false, -1, "", "*"},
		{"bad string", `"\x"`, false, -1, "", "*"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			old := "old"
			s, list := &old, []contentPiece{{Text: "old"}}
			err := UnmarshalContent([]byte(tt.in), &s, &list)
			if tt.wantErr != "" {
				if err == nil || (tt.wantErr != "*" && err.Error() != tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				if s != nil || list != nil {
					t.Fatalf("a failed decode left %v %v", s, list)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (s != nil) != tt.str || (list == nil && tt.items >= 0) || (list != nil && len(list) != tt.items) {
				t.Fatalf("decoded %v %v", s, list)
			}
			got, err := MarshalContent(s, list)
			if err != nil || string(got) != tt.out {
				t.Fatalf("re-encoded %s (%v), want %s", got, err, tt.out)
			}
		})
	}
}

// FuzzContent: content comes from client bodies. Whatever decodes
// re-encodes to a value that decodes to the same encoding.
func FuzzContent(f *testing.F) {
	for _, s := range []string{`null`, `"s"`, `[]`, `[{"text":"a"}]`, ` [1]`, `{}`, `"\ud800"`, ``, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s *string
		var list []contentPiece
		if UnmarshalContent(data, &s, &list) != nil {
			return
		}
		if s != nil && list != nil {
			t.Fatalf("both forms set from %q", data)
		}
		first, err := MarshalContent(s, list)
		if err != nil {
			t.Fatalf("decoded %q but cannot encode it: %v", data, err)
		}
		var s2 *string
		var list2 []contentPiece
		if err := UnmarshalContent(first, &s2, &list2); err != nil {
			t.Fatalf("own encoding %s does not decode: %v", first, err)
		}
		if second, err := MarshalContent(s2, list2); err != nil || !bytes.Equal(first, second) {
			t.Fatalf("encoding not stable: %s then %s (%v)", first, second, err)
		}
	})
}
