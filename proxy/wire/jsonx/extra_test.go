package jsonx

import (
	"bytes"
	"encoding/json"
	"testing"
)

// extraWire is a wire type built the way the wire packages build theirs.
type extraWire struct {
	Kind  string                     `json:"kind"`
	Count *int                       `json:"count,omitempty"`
	Raw   json.RawMessage            `json:"raw,omitempty"`
	Extra map[string]json.RawMessage `json:"-"`
}

type extraWireAlias extraWire

func (w *extraWire) UnmarshalJSON(data []byte) error {
	return UnmarshalExtra(data, (*extraWireAlias)(w), &w.Extra)
}

func (w extraWire) MarshalJSON() ([]byte, error) {
	return EncodeObject(extraWireAlias(w), w.Extra)
}

// extraUnion is the lenient kind: a key of the wrong type is kept verbatim.
type extraUnion struct {
	Kind   string                     `json:"kind"`
	Source *struct{ URL string }      `json:"source,omitempty"`
	Extra  map[string]json.RawMessage `json:"-"`
}

type extraUnionAlias extraUnion

func (u *extraUnion) UnmarshalJSON(data []byte) error {
	return UnmarshalExtraLenient(data, (*extraUnionAlias)(u), &u.Extra)
}

func TestUnmarshalExtra(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    string // the value re-encoded; "" when decoding fails
		extras  int
		wantErr bool
	}{
		{"fields in field order, then the unknown keys sorted and verbatim", `{"zeta":true,"raw":[1, 2],"kind":"a","alpha":{"x": 1}}`,
			`{"kind":"a","raw":[1,2],"alpha":{"x": 1},"zeta":true}`, 2, false},
		{"no unknown keys leaves extra nil", `{"kind":"b","count":3}`, `{"kind":"b","count":3}`, 0, false},
		{"an unknown key named like the Go field", `{"Kind":"c"}`, `{"kind":"","Kind":"c"}`, 1, false},
		{"no HTML escaping", `{"kind":"<&>","x":"<&>"}`, `{"kind":"<&>","x":"<&>"}`, 1, false},
		{"wrong field type", `{"kind":5}`, "", 0, true},
		{"not an object", `[1]`, "", 0, true},
		{"null", `null`, "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := extraWire{Kind: "kept", Extra: map[string]json.RawMessage{"old": []byte(`1`)}}
			w := before
			err := json.Unmarshal([]byte(tt.in), &w)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tt.wantErr)
			}
			if err != nil {
				if w.Kind != before.Kind || len(w.Extra) != 1 {
					t.Fatalf("a failed decode changed the value: %+v", w)
				}
				return
			}
			if len(w.Extra) != tt.extras || (tt.extras == 0 && w.Extra != nil) {
				t.Fatalf("extra %v, want %d keys", w.Extra, tt.extras)
			}
			got, err := w.MarshalJSON() // the bytes themselves: json.Marshal would compact them
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("re-encoded %s, want %s", got, tt.want)
			}
		})
	}
}

func TestUnmarshalExtraLenient(t *testing.T) {
	t.Parallel()
	var u extraUnion
	if err := json.Unmarshal([]byte(`{"kind":"search_result","source":"https://a.example","n":1}`), &u); err != nil {
		t.Fatal(err)
	}
	if u.Kind != "search_result" || u.Source != nil || string(u.Extra["source"]) != `"https://a.example"` || string(u.Extra["n"]) != `1` {
		t.Fatalf("lenient decode %+v, extra %v", u, u.Extra)
	}
	if err := json.Unmarshal([]byte(`"text"`), &u); err == nil {
		t.Fatal("a string decoded as an object")
	}
	if u.Kind != "search_result" {
		t.Fatalf("a failed decode changed the value: %+v", u)
	}
}

// FuzzUnmarshalExtra feeds request-body-like bytes (the wire types decode
// what clients send) through both decoders: nothing panics, a decoded
// value re-encodes to JSON that decodes to the same encoding, and no key a
// field owns is left among the extras of a strict decode.
func FuzzUnmarshalExtra(f *testing.F) {
	for _, s := range []string{
		`{"kind":"a","count":1,"raw":{"x":[1,2]},"other":"y"}`,
		`{"kind":"a","kind":"b"}`,
		`{"Kind":"c","KIND":1}`,
		`{"source":{"URL":"u"},"kind":"image"}`,
		`{"source":"s","count":"many"}`,
		`{"raw":null,"count":null}`,
		`{"x":"\ud800","kind":"\u003c"}`,
		`[]`, `null`, `"s"`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var w extraWire
		if err := json.Unmarshal(data, &w); err == nil {
			for _, owned := range []string{"kind", "count", "raw"} {
				if _, ok := w.Extra[owned]; ok {
					t.Fatalf("extra keeps the field key %q", owned)
				}
			}
			first, err := w.MarshalJSON()
			if err != nil {
				t.Fatalf("decoded %q but cannot encode it: %v", data, err)
			}
			var again extraWire
			if err := json.Unmarshal(first, &again); err != nil {
				t.Fatalf("own encoding %s does not decode: %v", first, err)
			}
			second, err := again.MarshalJSON()
			if err != nil || !bytes.Equal(first, second) {
				t.Fatalf("encoding not stable: %s then %s (%v)", first, second, err)
			}
		}
		var u extraUnion
		_ = json.Unmarshal(data, &u)
	})
}
