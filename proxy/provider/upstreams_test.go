package provider

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseUpstreams(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in string
		want     []Upstream
		err      string
	}{
		{"empty", "", nil, ""},
		{"blank", " ; \n ", nil, ""},
		{"one", "vllm=http://10.0.0.5:8000/v1|llama-,qwen", []Upstream{{Name: "vllm", BaseURL: "http://10.0.0.5:8000/v1", Prefixes: []string{"llama-", "qwen"}}}, ""},
		{"two, spaces, newline, trailing slash, case", " vllm = http://10.0.0.5:8000/v1/ | Meta-Llama/ , qwen ;\nollama=http://127.0.0.1:11434/v1|llama3",
			[]Upstream{
				{Name: "vllm", BaseURL: "http://10.0.0.5:8000/v1", Prefixes: []string{"meta-llama/", "qwen"}},
				{Name: "ollama", BaseURL: "http://127.0.0.1:11434/v1", Prefixes: []string{"llama3"}},
			}, ""},
		{"https", "gemini=https://generativelanguage.googleapis.com/v1beta/openai|gemini-", []Upstream{{Name: "gemini", BaseURL: "https://generativelanguage.googleapis.com/v1beta/openai", Prefixes: []string{"gemini-"}}}, ""},
		{"no prefixes", "vllm=http://h/v1|", nil, "no model prefixes"},
		{"no bar", "vllm=http://h/v1", nil, "want name=base-url|prefix"},
		{"no name", "=http://h/v1|x", nil, "name must be"},
		{"bad name", "vLLM=http://h/v1|x", nil, "name must be"},
		{"reserved", "openai=http://h/v1|x", nil, "built-in provider"},
		{"twice", "a=http://h/v1|x;a=http://g/v1|y", nil, "declared twice"},
		{"dup prefix", "a=http://h/v1|x;b=http://g/v1|x", nil, `already served by "a"`},
		{"not http", "a=ftp://h/v1|x", nil, "not an http(s) base URL"},
		{"no host", "a=http:///v1|x", nil, "not an http(s) base URL"},
		{"query", "a=http://h/v1?key=1|x", nil, "not an http(s) base URL"},
		{"credentials", "a=http://u:p@h/v1|x", nil, "not an http(s) base URL"},
		{"blank in prefix", "a=http://h/v1|ll ama", nil, "contains blanks"},
		{"notools", "ollama=http://127.0.0.1:11434/v1|llama3,qwen|notools",
			[]Upstream{{Name: "ollama", BaseURL: "http://127.0.0.1:11434/v1", Prefixes: []string{"llama3", "qwen"}, NoTools: true}}, ""},
		{"notools, spaces and case, beside one with tools", "a=http://h/v1|x| NoTools ;b=http://g/v1|y",
			[]Upstream{{Name: "a", BaseURL: "http://h/v1", Prefixes: []string{"x"}, NoTools: true}, {Name: "b", BaseURL: "http://g/v1", Prefixes: []string{"y"}}}, ""},
		{"empty options", "a=http://h/v1|x|", []Upstream{{Name: "a", BaseURL: "http://h/v1", Prefixes: []string{"x"}}}, ""},
		{"unknown option", "a=http://h/v1|x|nostream", nil, `unknown option "nostream"`},
		{"option in place of prefixes", "a=http://h/v1||notools", nil, "no model prefixes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseUpstreams(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

func FuzzParseUpstreams(f *testing.F) {
	f.Add("vllm=http://10.0.0.5:8000/v1|llama-,qwen;ollama=http://127.0.0.1:11434/v1|llama3")
	f.Add("a=|;=|,")
	f.Fuzz(func(t *testing.T, s string) {
		ups, err := ParseUpstreams(s)
		if err != nil {
			return
		}
		for _, u := range ups {
			if len(u.Prefixes) == 0 || u.Name == "" || !strings.HasPrefix(u.BaseURL, "http") {
				t.Fatalf("accepted %+v", u)
			}
		}
	})
}
