package main

import (
	"slices"
	"testing"
)

func TestInflections(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		fn   func(string) []string
		in   string
		want []string
	}{
		{"plural", sForms, "agency", []string{"agencies"}},
		{"plural", sForms, "day", []string{"days"}},
		{"plural", sForms, "church", []string{"churches"}},
		{"plural", sForms, "box", []string{"boxes"}},
		{"plural", sForms, "potato", []string{"potatos", "potatoes"}},
		{"past", edForms, "paint", []string{"painted"}},
		{"past", edForms, "bake", []string{"baked"}},
		{"past", edForms, "try", []string{"tried"}},
		{"past", edForms, "stop", []string{"stopped", "stoped"}},
		{"gerund", ingForms, "run", []string{"running", "runing"}},
		{"gerund", ingForms, "die", []string{"dying"}},
		{"gerund", ingForms, "see", []string{"seeing"}},
		{"gerund", ingForms, "bake", []string{"baking", "bakeing"}},
		{"gerund", ingForms, "play", []string{"playing"}},
		{"comparative", comparatives, "big", []string{"bigger", "biggest", "biger", "bigest"}},
		{"comparative", comparatives, "happy", []string{"happier", "happiest"}},
		{"comparative", comparatives, "late", []string{"later", "latest"}},
	}
	for _, tt := range tests {
		if got := tt.fn(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("%s(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestBuildV1(t *testing.T) {
	t.Parallel()
	tagged := func(n, v, a, r int) *[nPOS]int { return &[nPOS]int{n, v, a, r} }
	src := &sources{
		tagged: map[string]*[nPOS]int{
			"paint":    tagged(4, 5, 0, 0),
			"painting": tagged(5, 0, 0, 0),
			"child":    tagged(3, 0, 0, 0),
			"go":       tagged(1, 30, 0, 0),
			"new":      tagged(0, 0, 9, 0),
			"news":     tagged(6, 0, 0, 0),
			"building": tagged(5, 0, 0, 0),
			"build":    tagged(0, 8, 0, 0),
		},
		exc: [nPOS][][2]string{
			noun: {{"children", "child"}},
			verb: {{"went", "go"}},
		},
		attested: map[string]bool{
			"paints": true, "painted": true, "painting": true, "paintings": true,
			"children": true, "went": true, "goes": true, "news": true,
			"building": true, "buildings": true, "builds": true,
			"selfie": true, "selfies": true, "caroline": true,
		},
	}
	d := buildV1(src, policy{conflict: "always", listBases: true})
	wantForms := map[string]string{
		"paints": "paint", "painted": "paint", "painting": "paint", "paintings": "paint",
		"children": "child", "went": "go", "goes": "go",
		"building": "build", "buildings": "build", "builds": "build",
		"selfies": "selfie",
	}
	for f, l := range wantForms {
		if d.forms[f] != l {
			t.Errorf("form %q -> %q, want %q", f, d.forms[f], l)
		}
	}
	if _, ok := d.forms["news"]; ok {
		t.Error("news is not a form of the adjective new")
	}
	for _, w := range []string{"paint", "child", "go", "new", "news", "build", "selfie", "caroline"} {
		if !d.terms[w] {
			t.Errorf("%q is not a term", w)
		}
	}
	for f := range d.forms {
		if d.terms[f] || d.stop[f] {
			t.Errorf("form %q is also a term or stopword", f)
		}
	}
	never := buildV1(src, policy{conflict: "never", listBases: true})
	if _, ok := never.forms["painting"]; ok || !never.terms["painting"] {
		t.Error(`conflict "never" mapped the lemma "painting"`)
	}
	if never.forms["paintings"] != "painting" {
		t.Errorf(`conflict "never": paintings -> %q, want painting`, never.forms["paintings"])
	}
}

func TestParseSynset(t *testing.T) {
	t.Parallel()
	line := "00001740 29 v 04 breathe 0 take_a_breath 0 respire 0 suspire 3 003 * 00005041 v 0000 + 00831191 n 0303 ^ 00004227 v 0103 02 + 02 00 | draw air into, and expel out of, the lungs"
	s, key, ok := parseSynset(line)
	if !ok || key != "v:00001740" {
		t.Fatalf("parseSynset: ok %v key %q", ok, key)
	}
	if !slices.Equal(s.words, []string{"breathe", "take_a_breath", "respire", "suspire"}) {
		t.Errorf("words %q", s.words)
	}
	if len(s.ptrs) != 1 || s.ptrs[0] != (ptr{target: "n:00831191", src: 3, dst: 3}) {
		t.Errorf("ptrs %+v", s.ptrs)
	}
}

func TestAddDerivations(t *testing.T) {
	t.Parallel()
	d := &dictionary{
		stop:  map[string]bool{"the": true},
		terms: map[string]bool{"adopt": true, "adoption": true, "adopter": true, "king": true, "reign": true, "act": true, "action": true},
		forms: map[string]string{"adopting": "adopt", "adoptions": "adoption"},
	}
	src := &sources{tagged: map[string]*[nPOS]int{"adopt": {0, 9, 0, 0}, "adoption": {3, 0, 0, 0}}}
	links := [][2]string{{"adopt", "adoption"}, {"adoption", "adopter"}, {"king", "reign"}, {"act", "action"}, {"the", "adopt"}}
	addDerivations(d, src, links, 8)
	want := map[string]string{"adoption": "adopt", "adopter": "adopt", "adopting": "adopt", "adoptions": "adopt", "action": "act"}
	for f, l := range want {
		if d.forms[f] != l {
			t.Errorf("%q -> %q, want %q", f, d.forms[f], l)
		}
	}
	if _, ok := d.forms["reign"]; ok {
		t.Error("king and reign share no stem but were merged")
	}
	if d.terms["adoption"] || !d.terms["adopt"] {
		t.Error("merged words must leave the terms, the family head must stay")
	}
}
