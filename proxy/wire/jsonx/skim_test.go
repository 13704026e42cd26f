package jsonx

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

func TestMembersElements(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in      string
		members []string // key=value pairs as walked; nil: not an object
		elems   []string // nil: not an array
	}{
		{`{}`, []string{}, nil},
		{` { "a" : 1 , "b":[1, {"c":"}"}] ,"a":"x\"y"} `, []string{`a=1`, `b=[1, {"c":"}"}]`, `a="x\"y"`}, nil},
		{`{"k\u0065y":null}`, []string{`k\u0065y=null`}, nil},
		{`[]`, nil, []string{}},
		{`[ 1,"two" , {"three":[3]},null,true ]`, nil, []string{`1`, `"two"`, `{"three":[3]}`, `null`, `true`}},
		{`"s"`, nil, nil},
		{`12`, nil, nil},
	}
	for _, c := range cases {
		var got []string
		ok := Members([]byte(c.in), func(k, v []byte) bool {
			got = append(got, string(k)+"="+string(v))
			return true
		})
		if ok != (c.members != nil) || (ok && !slices.Equal(got, c.members)) {
			t.Errorf("Members(%s) = %v %q, want %q", c.in, ok, got, c.members)
		}
		got = nil
		ok = Elements([]byte(c.in), func(v []byte) bool {
			got = append(got, string(v))
			return true
		})
		if ok != (c.elems != nil) || (ok && !slices.Equal(got, c.elems)) {
			t.Errorf("Elements(%s) = %v %q, want %q", c.in, ok, got, c.elems)
		}
	}
	n := 0
	if Members([]byte(`{"a":1,"b":2}`), func(k, v []byte) bool { n++; return false }) || n != 1 {
		t.Errorf("Members went on after fn said stop (%d calls) or reported the whole walk", n)
	}
}

func TestString(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want string
		ok   bool
	}{
		{`"plain"`, "plain", true},
		{`""`, "", true},
		{`"a\nb \u00e9 \"q\""`, "a\nb é \"q\"", true},
		{"\"bad \xff byte\"", "bad \uFFFD byte", true},
		{`null`, "", false},
		{`12`, "", false},
	}
	for _, c := range cases {
		got, ok := String([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("String(%s) = %q %v, want %q %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// FuzzSkim: on valid JSON, Members and Elements see what encoding/json
// decodes (an object's last value for a key; values alike once
// compacted), and String decodes as it does.
func FuzzSkim(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[1,2],"a":{"x":"y"}}`, `[1,"a",{"b":null}]`, `"s\u00e9"`, `{"k\"":1}`, ` [ ] `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(b, &obj) == nil && obj != nil {
			got := map[string][]byte{}
			ok := Members(b, func(k, v []byte) bool {
				key, good := String(append(append([]byte{'"'}, k...), '"'))
				if !good {
					t.Fatalf("key %q of %q does not decode", k, b)
				}
				got[key] = v
				return true
			})
			if !ok || len(got) != len(obj) {
				t.Fatalf("Members(%q): %v, %d members, the decoder %d", b, ok, len(got), len(obj))
			}
			for k, v := range obj {
				if !sameJSON(got[k], v) {
					t.Fatalf("Members(%q)[%q] = %q, the decoder %q", b, k, got[k], v)
				}
			}
		}
		var arr []json.RawMessage
		if json.Unmarshal(b, &arr) == nil && arr != nil {
			var got [][]byte
			if !Elements(b, func(v []byte) bool { got = append(got, v); return true }) || len(got) != len(arr) {
				t.Fatalf("Elements(%q): %d elements, the decoder %d", b, len(got), len(arr))
			}
			for i := range arr {
				if !sameJSON(got[i], arr[i]) {
					t.Fatalf("Elements(%q)[%d] = %q, the decoder %q", b, i, got[i], arr[i])
				}
			}
		}
		tb := bytes.TrimSpace(b)
		got, ok := String(tb)
		if ok != (tb[0] == '"') {
			t.Fatalf("String(%q) = %v", b, ok)
		}
		var s string
		if ok && (json.Unmarshal(b, &s) != nil || got != s) {
			t.Fatalf("String(%q) = %q, the decoder %q", b, got, s)
		}
	})
}

func sameJSON(a, b []byte) bool {
	var x, y bytes.Buffer
	return json.Compact(&x, a) == nil && json.Compact(&y, b) == nil && bytes.Equal(x.Bytes(), y.Bytes())
}
