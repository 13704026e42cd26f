package jsonx

import (
	"encoding/json"
	"testing"
)

// TestObjectEdit: a parsed object keeps its keys' order through edits, a
// key set again keeps its place, a new key goes last, and values come
// back compact.
func TestObjectEdit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   string
		edit func(o *Object)
		want string
	}{
		{"untouched, compacted", `{"b": [1, 2], "a" :{"x": null}}`, func(*Object) {}, `{"b":[1,2],"a":{"x":null}}`},
		{"set in place", `{"a":1,"b":2,"c":3}`, func(o *Object) { o.Set("b", "<two>") }, `{"a":1,"b":"<two>","c":3}`},
		{"new key last", `{"a":1}`, func(o *Object) { o.SetRaw("z", json.RawMessage(` { "k" : true } `)) }, `{"a":1,"z":{"k":true}}`},
		{"delete", `{"a":1,"b":2,"c":3}`, func(o *Object) { o.Del("b"); o.Del("absent") }, `{"a":1,"c":3}`},
		{"empty raw is null", `{"a":1}`, func(o *Object) { o.SetRaw("a", nil) }, `{"a":null}`},
		{"duplicate key: first place, last value", `{"a":1,"b":2,"a":3}`, func(*Object) {}, `{"a":3,"b":2}`},
		{"raw that is not JSON stays as set", `{}`, func(o *Object) { o.SetRaw("a", []byte("{oops")) }, `{"a":{oops}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			o, err := ParseObject([]byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			c.edit(o)
			if got := string(o.JSON()); got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
}

// TestObjectRead: the readers of a parsed object.
func TestObjectRead(t *testing.T) {
	t.Parallel()
	o, err := ParseObject([]byte(`{"s":"x","n":null,"a":[1,{"b":2}],"i":4}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		got  any
		want any
	}{
		{"str", o.Str("s"), "x"},
		{"str of a number", o.Str("i"), ""},
		{"str absent", o.Str("zz"), ""},
		{"has", o.Has("s"), true},
		{"has null", o.Has("n"), false},
		{"has absent", o.Has("zz"), false},
		{"array", len(o.Array("a")), 2},
		{"array of a string", len(o.Array("s")), 0},
		{"get", string(o.Get("i")), "4"},
		{"get absent", o.Get("zz") == nil, true},
		{"keys", len(o.Keys()), 4},
		{"is null", IsNull(json.RawMessage(" null ")), true},
		{"is not null", IsNull(json.RawMessage(`"null"`)), false},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
}

// TestParseObjectRefuses: what is not one JSON object.
func TestParseObjectRefuses(t *testing.T) {
	t.Parallel()
	for _, in := range []string{``, `[1]`, `"s"`, `{"a":}`, `{"a":1`, `{1:2}`} {
		if _, err := ParseObject([]byte(in)); err == nil {
			t.Errorf("%q parsed", in)
		}
	}
}

// TestObjectJSONPanics: an edit that cannot encode is a caller's bug.
func TestObjectJSONPanics(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	var o Object
	o.Set("f", func() {})
	o.JSON()
}

// FuzzParseObject: the fast path reads what the decoder reads, member for
// member, and writes it back the same; what it declines the decoder reads.
func FuzzParseObject(f *testing.F) {
	for _, s := range []string{`{}`, ` { "a" : 1 , "b":[1, {"c": "x y"}] } `, `{"a":"\"}\\"}`, `{"k\u0041":1}`,
		`{"a":1}trailing`, `{"a":tru}`, `{"a":[1,2}`, `{"a":"\x01"}`, `{"a":1,"a":{"b":null}}`, `{"n":-1.5e3,"s":"é"}`,
		`{"a":}`, `{"a" 1}`, `{"a":1,}`, `[{"a":1}]`, `{"a":{"b":[]}, "c" : "} ]"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := scanObject(b, false)
		slow, err := parseByDecoder(b)
		if trusted, tok := scanObject(b, true); json.Valid(b) && (tok != ok || (ok && string(trusted.JSON()) != string(fast.JSON()))) {
			t.Fatalf("%q: read as valid already: %v, as not: %v", b, tok, ok)
		}
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("%q: fast path read what the decoder refuses: %v", b, err)
		}
		if len(fast.members) != len(slow.members) {
			t.Fatalf("%q: %d members, decoder %d", b, len(fast.members), len(slow.members))
		}
		for i, m := range fast.members {
			if s := slow.members[i]; m.key != s.key || string(m.val) != string(s.val) {
				t.Fatalf("%q: member %d is %q=%s, decoder %q=%s", b, i, m.key, m.val, s.key, s.val)
			}
		}
		if got, want := string(fast.JSON()), string(slow.JSON()); got != want {
			t.Fatalf("%q: writes %s, decoder %s", b, got, want)
		}
	})
}

// TestParseObjectFastPath: the bodies the proxy sends take the fast path.
func TestParseObjectFastPath(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`{"model":"m","messages":[{"role":"user","content":"a \"quoted\" {brace}"}],"n":1,"x":null,"t":true}`, ` { "a" : [ 1 ] } `} {
		if _, ok := scanObject([]byte(in), false); !ok {
			t.Errorf("%s: declined", in)
		}
	}
}

// TestGetCompact: a parsed value without whitespace is compact, one with
// is not; a compact value set back is written as it is.
func TestGetCompact(t *testing.T) {
	t.Parallel()
	o, err := ParseObject([]byte(`{"a":[1,"x y"],"b":[1, 2]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, c := o.GetCompact("a"); !c {
		t.Error("a: not compact")
	}
	if _, c := o.GetCompact("b"); c {
		t.Error("b: compact")
	}
	if _, c := o.GetCompact("zz"); c {
		t.Error("absent: compact")
	}
	o.SetCompact("a", []byte(`[1,"x y",3]`))
	if got, want := string(o.JSON()), `{"a":[1,"x y",3],"b":[1,2]}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
