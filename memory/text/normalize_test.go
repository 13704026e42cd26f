package text

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  ,.!? ", nil},
		{"Hey Mel! Good to see you!", []string{"hey", "mel", "good", "to", "see", "you"}},
		{"I'm swamped with the kids & work.", []string{"i'm", "swamped", "with", "the", "kids", "work"}},
		{"Caroline's LGBTQ group", []string{"caroline's", "lgbtq", "group"}},
		{"Caroline’s book, the students' books", []string{"caroline's", "book", "the", "students", "books"}},
		{"'quoted' words", []string{"quoted", "words"}},
		{"rock'n'roll don't", []string{"rock'n'roll", "don't"}},
		{"It was 8 May, 2023 at 1:56 pm", []string{"it", "was", "8", "may", "2023", "at", "1", "56", "pm"}},
		{"pi is 3.14, costs 1,000,000 or 1,5 and 12,3456", []string{"pi", "is", "3.14", "costs", "1000000", "or", "1", "5", "and", "12", "3456"}},
		{"end. 4.", []string{"end", "4"}},
		{"self-care e-mail user@example.com", []string{"self", "care", "e", "mail", "user", "example", "com"}},
		{"snake_case camelCase", []string{"snake", "case", "camelcase"}},
		{"Café CAFÉ cafe\u0301", []string{"café", "café", "café"}},
		{"ΣΊΣΥΦΟΣ Straße İstanbul", []string{"σίσυφοσ", "straße", "istanbul"}},
		{"日本語 テキスト", []string{"日本語", "テキスト"}},
		{"mp3 covid19 4th 1990s", []string{"mp3", "covid19", "4th", "1990s"}},
		{"emoji 👍 between😀words", []string{"emoji", "between", "words"}},
		{"Tab\tnew\nline", []string{"tab", "new", "line"}},
	}
	for _, tt := range tests {
		if got := Normalize(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNormalizeLongToken(t *testing.T) {
	t.Parallel()
	got := Normalize("x " + strings.Repeat("é", 100) + " y")
	if len(got) != 3 || len(got[1]) > MaxTokenBytes || !utf8.ValidString(got[1]) || got[2] != "y" {
		t.Fatalf("long token not capped at a rune boundary: %q", got)
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"I'm Caroline's", "3.14 1,000", "Café\u0301", "a''b", "'", "1,", "\xff'a", strings.Repeat("a", 70)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		toks := Normalize(s)
		for _, tok := range toks {
			if tok == "" || len(tok) > MaxTokenBytes || !utf8.ValidString(tok) {
				t.Fatalf("bad token %q from %q", tok, s)
			}
			if tok != strings.ToLower(tok) && !hasSpecialCase(tok) {
				t.Fatalf("token %q from %q is not lowercase", tok, s)
			}
			for i, r := range tok {
				if r == '\'' || r == '.' {
					if i == 0 || i == len(tok)-1 {
						t.Fatalf("token %q from %q starts or ends with a separator", tok, s)
					}
					continue
				}
				if !isWordRune(r) {
					t.Fatalf("token %q from %q holds %q", tok, s, r)
				}
			}
		}
		// Idempotent on its own output.
		joined := strings.Join(toks, " ")
		if again := Normalize(joined); !slices.Equal(again, toks) && utf8.ValidString(s) {
			t.Fatalf("Normalize not stable: %q -> %q -> %q", s, toks, again)
		}
	})
}

// hasSpecialCase reports runes whose lowercase form is not a fixed point of
// strings.ToLower (rare titlecase/uppercase-only letters after NFC).
func hasSpecialCase(tok string) bool {
	for _, r := range tok {
		if unicode.ToLower(r) != r {
			return true
		}
	}
	return false
}
