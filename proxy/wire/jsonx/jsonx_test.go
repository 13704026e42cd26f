package jsonx

import (
	"encoding/json"
	"testing"
)

type sample struct {
	Name  string          `json:"name"`
	Count *int            `json:"count,omitempty"`
	Raw   json.RawMessage `json:"raw,omitempty"`
	Skip  string          `json:"-"`
}

func TestDecodeObject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		in        string
		wantName  string
		wantExtra []string
		wantErr   bool
	}{
		{"known and unknown", `{"name":"a","seed":7,"n":{"x":1}}`, "a", []string{"n", "seed"}, false},
		{"case is exact", `{"Name":"a"}`, "", []string{"Name"}, false},
		{"only known", `{"name":"b","count":3}`, "b", nil, false},
		{"dash tag is not a key", `{"-":1,"Skip":2}`, "", []string{"-", "Skip"}, false},
		{"null", `null`, "", nil, true},
		{"array", `[1]`, "", nil, true},
		{"wrong field type", `{"name":5}`, "", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s sample
			extra, err := DecodeObject([]byte(tt.in), &s)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if s.Name != tt.wantName {
				t.Errorf("name %q, want %q", s.Name, tt.wantName)
			}
			if len(extra) != len(tt.wantExtra) {
				t.Fatalf("extra %v, want keys %v", extra, tt.wantExtra)
			}
			for _, k := range tt.wantExtra {
				if _, ok := extra[k]; !ok {
					t.Errorf("extra lacks %q", k)
				}
			}
		})
	}
}

func TestEncodeObject(t *testing.T) {
	t.Parallel()
	two := 2
	tests := []struct {
		name  string
		src   sample
		extra map[string]json.RawMessage
		want  string
	}{
		{"no extra", sample{Name: "a<b>"}, nil, `{"name":"a<b>"}`},
		{"extra sorted after fields", sample{Name: "a", Count: &two}, map[string]json.RawMessage{"z": []byte(`1`), "b": []byte(`[true]`)}, `{"name":"a","count":2,"b":[true],"z":1}`},
		{"owned key not duplicated", sample{Name: "a"}, map[string]json.RawMessage{"name": []byte(`"x"`)}, `{"name":"a"}`},
	}
	for _, tt := range tests {
		got, err := EncodeObject(tt.src, tt.extra)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestEncodeObjectEmptyStruct(t *testing.T) {
	t.Parallel()
	type empty struct {
		A string `json:"a,omitempty"`
	}
	got, err := EncodeObject(empty{}, map[string]json.RawMessage{"k": []byte(`null`)})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"k":null}` {
		t.Errorf("got %s", got)
	}
}

func TestObject(t *testing.T) {
	t.Parallel()
	var o Object
	if b, _ := o.Bytes(); string(b) != "{}" {
		t.Errorf("empty object = %s", b)
	}
	o.Set("z", "<&>")
	o.SetRaw("a", nil)
	o.Set("m", map[string]int{"y": 1})
	b, err := o.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"z":"<&>","a":null,"m":{"y":1}}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
	var bad Object
	bad.Set("f", func() {})
	if _, err := bad.Bytes(); err == nil {
		t.Error("want the encoding error from Bytes")
	}
}

func TestLenientKeepsMisfitValuesInPlace(t *testing.T) {
	t.Parallel()
	var s sample
	extra, err := DecodeObjectLenient([]byte(`{"name":{"odd":true},"count":"many","other":1}`), &s)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "" || s.Count != nil {
		t.Errorf("misfit values leaked into fields: %+v", s)
	}
	if string(extra["name"]) != `{"odd":true}` || string(extra["count"]) != `"many"` || string(extra["other"]) != "1" {
		t.Errorf("extra = %v", extra)
	}
	var o Object
	o.UseExtra(extra)
	o.Set("name", s.Name)
	o.Set("count", s.Count)
	o.SetExtra(extra)
	b, err := o.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"name":{"odd":true},"count":"many","other":1}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
	if _, err := DecodeObjectLenient([]byte(`[1]`), &s); err == nil {
		t.Error("lenient decoding must still reject a non-object")
	}
}
