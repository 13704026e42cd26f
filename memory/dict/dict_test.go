package dict

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/memory/text"
)

const small = "perpetuity-dictionary\t3\ttest-small\n" +
	"# a comment\n" +
	"[stopwords]\n" +
	"the\n" +
	"i'm\n" +
	"\n" +
	"[terms]\n" +
	"child\n" +
	"paint\n" +
	"café\n" +
	"[forms]\n" +
	"children\tchild\n" +
	"painted\tpaint\n" +
	"painting\tpaint\n"

func parseSmall(t *testing.T) *Dictionary {
	t.Helper()
	d, err := Parse(strings.NewReader(small))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return d
}

func TestParseSmall(t *testing.T) {
	t.Parallel()
	d := parseSmall(t)
	if d.Version != 3 || d.Name != "test-small" || d.KnownTerms() != 3 || d.Len() != 8 {
		t.Fatalf("got version %d name %q terms %d len %d", d.Version, d.Name, d.KnownTerms(), d.Len())
	}
	want := map[string]uint32{"the": NoTerm, "i'm": NoTerm, "child": 1, "paint": 2, "café": 3, "children": 1, "painted": 2, "painting": 2}
	got := maps.Collect(d.Entries())
	if !maps.Equal(got, want) {
		t.Fatalf("Entries = %v, want %v", got, want)
	}
	var words []string
	for w := range d.Entries() {
		words = append(words, w)
	}
	if !slices.IsSorted(words) {
		t.Errorf("Entries not in word order: %q", words)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	header := "perpetuity-dictionary\t1\tx\n"
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "empty file"},
		{"bad magic", "dictionary\t1\tx\n", "line 1: header"},
		{"bad version", "perpetuity-dictionary\tone\tx\n", "line 1: header: version"},
		{"zero version", "perpetuity-dictionary\t0\tx\n", "line 1: header: version"},
		{"no name", "perpetuity-dictionary\t1\t \n", "line 1: header: empty name"},
		{"entry before section", header + "word\n", "line 2: entry \"word\" before any [section]"},
		{"unknown section", header + "[synonyms]\n", "line 2: unknown section"},
		{"section twice", header + "[terms]\na\n[terms]\n", "line 4: section [terms] opened twice"},
		{"section order", header + "[forms]\n[terms]\n", "line 3: section [terms] after [forms]"},
		{"not normalized", header + "[terms]\nCaps\n", "line 3: \"Caps\" is not a normalized token"},
		{"two tokens", header + "[terms]\nice cream\n", "line 3: \"ice cream\" is not a normalized token"},
		{"duplicate", header + "[stopwords]\nthe\n[terms]\nthe\n", "line 5: \"the\" already listed on line 3"},
		{"form without tab", header + "[terms]\na\n[forms]\nb a\n", "line 5: form \"b a\": want word<TAB>lemma"},
		{"form three fields", header + "[terms]\na\n[forms]\nb\ta\tc\n", "line 5: form"},
		{"unknown lemma", header + "[terms]\na\n[forms]\nb\tc\n", "line 5: lemma \"c\" of \"b\" is not a listed term"},
		{"lemma is a stopword", header + "[stopwords]\nthe\n[terms]\na\n[forms]\nb\tthe\n", "line 7: lemma \"the\""},
		{"form is a term", header + "[terms]\na\nb\n[forms]\nb\ta\n", "line 6: \"b\" already listed on line 4"},
	}
	for _, tt := range tests {
		_, err := Parse(strings.NewReader(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Parse error %v, want it to contain %q", tt.name, err, tt.want)
		}
	}
}

func TestLookupAndTerms(t *testing.T) {
	t.Parallel()
	d := parseSmall(t)
	tests := []struct {
		token string
		id    uint32
		ok    bool
	}{
		{"the", NoTerm, false},
		{"i'm", NoTerm, false},
		{"children", 1, true},
		{"children's", 1, true}, // possessive of a form
		{"painting", 2, true},
		{"caroline", HashedID("caroline"), true},
		{"caroline's", HashedID("caroline"), true}, // names keep one id
		{"rock'n'roll", HashedID("rock'n'roll"), true},
		{"'s", HashedID("'s"), true},
		{"2023", HashedID("2023"), true},
	}
	for _, tt := range tests {
		if id, ok := d.Lookup(tt.token); id != tt.id || ok != tt.ok {
			t.Errorf("Lookup(%q) = %d, %v; want %d, %v", tt.token, id, ok, tt.id, tt.ok)
		}
	}

	toks := text.Normalize("I'm painting the children's room; Caroline painted it. Caroline's café!")
	ids, freqs, length := d.Terms(toks)
	caroline := HashedID("caroline")
	wantIDs := []uint32{1, 2, 3, HashedID("room"), HashedID("it"), caroline}
	slices.Sort(wantIDs)
	if !slices.Equal(ids, wantIDs) {
		t.Fatalf("Terms ids = %v, want %v", ids, wantIDs)
	}
	wantFreq := map[uint32]uint16{1: 1, 2: 2, 3: 1, HashedID("room"): 1, HashedID("it"): 1, caroline: 2}
	for i, id := range ids {
		if freqs[i] != wantFreq[id] {
			t.Errorf("freq of %d = %d, want %d", id, freqs[i], wantFreq[id])
		}
	}
	if length != 8 { // all tokens but "i'm" and "the"
		t.Errorf("length = %d, want 8", length)
	}
	if q := d.QueryTerms(text.Normalize("The children, the CHILDREN")); !slices.Equal(q, []uint32{1}) {
		t.Errorf("QueryTerms = %v, want [1]", q)
	}
	if ids, freqs, length := d.Terms(nil); ids != nil || freqs != nil || length != 0 {
		t.Errorf("Terms(nil) = %v %v %d", ids, freqs, length)
	}
}

func TestTermsFrequencySaturates(t *testing.T) {
	t.Parallel()
	d := parseSmall(t)
	toks := make([]string, 70000)
	for i := range toks {
		toks[i] = "paint"
	}
	ids, freqs, length := d.Terms(toks)
	if len(ids) != 1 || freqs[0] != 65535 || length != 70000 {
		t.Fatalf("got %v %v %d", ids, freqs, length)
	}
}

func TestHashedID(t *testing.T) {
	t.Parallel()
	seen := make(map[uint32]string)
	for _, w := range []string{"", "a", "caroline", "melanie", "lgbtq", "2023", "日本語", strings.Repeat("x", 64)} {
		id := HashedID(w)
		if id&HashedBit == 0 {
			t.Errorf("HashedID(%q) = %#x lacks the hashed bit", w, id)
		}
		if id != HashedID(w) {
			t.Errorf("HashedID(%q) not deterministic", w)
		}
		if other, dup := seen[id]; dup {
			t.Errorf("HashedID collision %q and %q", w, other)
		}
		seen[id] = w
	}
	// FNV-1a 32 of "a" is 0xe40c292c; the top bit is forced on.
	if got := HashedID("a"); got != 0xe40c292c|HashedBit {
		t.Errorf("HashedID(a) = %#x", got)
	}
}

func TestBuiltin(t *testing.T) {
	t.Parallel()
	if vs := BuiltinVersions(); len(vs) == 0 || vs[len(vs)-1] != Latest {
		t.Fatalf("BuiltinVersions = %v, Latest = %d", vs, Latest)
	}
	if _, err := Builtin(999); err == nil {
		t.Error("Builtin(999) did not fail")
	}
	d, err := Builtin(1)
	if err != nil {
		t.Fatal(err)
	}
	if d.Version != 1 || d.Name == "" || d.KnownTerms() < 50000 {
		t.Fatalf("v1: version %d name %q, %d terms", d.Version, d.Name, d.KnownTerms())
	}
	same := [][]string{
		{"child", "children", "children's"},
		{"paint", "paints", "painted", "painting"},
		{"go", "goes", "went", "going", "gone"},
		{"agency", "agencies"},
		{"run", "running", "ran", "runs"},
		{"selfie", "selfies"},
		{"mouse", "mice"},
	}
	for _, group := range same {
		want, ok := d.Lookup(group[0])
		if !ok || want&HashedBit != 0 {
			t.Errorf("v1 does not know %q (id %#x)", group[0], want)
		}
		for _, w := range group[1:] {
			if got, _ := d.Lookup(w); got != want {
				t.Errorf("v1: %q -> %d, %q -> %d; want the same term", group[0], want, w, got)
			}
		}
	}
	for _, w := range []string{"the", "i'm", "don't", "and", "yeah"} {
		if _, ok := d.Lookup(w); ok {
			t.Errorf("v1: %q is not a stopword", w)
		}
	}
	for _, w := range []string{"caroline", "melanie", "lgbtq"} {
		if id, ok := d.Lookup(w); !ok || id == NoTerm {
			t.Errorf("v1 drops %q", w)
		}
	}
}

func TestBuiltinV2Derivations(t *testing.T) {
	t.Parallel()
	v1, err := Builtin(1)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := Builtin(2)
	if err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]string{{"adopt", "adoption"}, {"paint", "painter"}, {"experiment", "experimentation"}} {
		a1, _ := v1.Lookup(pair[0])
		b1, _ := v1.Lookup(pair[1])
		a2, _ := v2.Lookup(pair[0])
		b2, _ := v2.Lookup(pair[1])
		if a1 == b1 {
			t.Errorf("v1 already merges %q and %q", pair[0], pair[1])
		}
		if a2 != b2 {
			t.Errorf("v2 keeps %q (%d) and %q (%d) apart", pair[0], a2, pair[1], b2)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(small)
	f.Add("perpetuity-dictionary\t1\tx\n[forms]\na\tb\n")
	f.Add("perpetuity-dictionary\t1\tx\n[terms]\n\xff\n")
	f.Fuzz(func(t *testing.T, in string) {
		d, err := Parse(strings.NewReader(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "dictionary") {
				t.Fatalf("error without context: %v", err)
			}
			return
		}
		// Every listed word maps to NoTerm or a known id; forms resolve.
		for w, id := range d.Entries() {
			if id != NoTerm && (id&HashedBit != 0 || int(id) > d.KnownTerms()) {
				t.Fatalf("%q -> %d out of range (%d terms)", w, id, d.KnownTerms())
			}
			if got, ok := d.Lookup(w); got != id || ok != (id != NoTerm) {
				t.Fatalf("Lookup(%q) = %d, %v; Entries says %d", w, got, ok, id)
			}
		}
	})
}

func BenchmarkTerms(b *testing.B) {
	d, err := Builtin(Latest)
	if err != nil {
		b.Fatal(err)
	}
	toks := text.Normalize("Yeah, it's tough. So I'm carving out some me-time each day - running, reading, or playing my violin - which refreshes me and helps me stay present for my fam! Caroline's painting")
	b.ReportAllocs()
	for b.Loop() {
		d.Terms(toks)
	}
}

func BenchmarkBuiltin(b *testing.B) {
	for b.Loop() {
		if _, err := Builtin(Latest); err != nil {
			b.Fatal(err)
		}
	}
}
