package engine

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// truncateRunes keeps a text of at most n runes whole and cuts a longer one
// to n-1 runes and an ellipsis, as converting it to runes did; invalid
// UTF-8 bytes count one rune each.
func TestTruncateRunes(t *testing.T) {
	old := func(s string, n int) string {
		r := []rune(s)
		if len(r) <= n {
			return s
		}
		return string(r[:n-1]) + "…"
	}
	texts := []string{"", "a", "ab", "abc", "héllo", "日本語テキスト", "a\xffb\xfec", strings.Repeat("é", 50), "x" + strings.Repeat("日", 9)}
	for _, s := range texts {
		for n := 1; n <= 12; n++ {
			want := old(s, n)
			if utf8.ValidString(s) {
				if got := truncateRunes(s, n); got != want {
					t.Errorf("truncateRunes(%q, %d) = %q, want %q", s, n, got, want)
				}
			} else if got := truncateRunes(s, n); len([]rune(got)) > n {
				// string([]rune) turns invalid bytes into U+FFFD; the cut
				// keeps them, and only the length rule applies.
				t.Errorf("truncateRunes(%q, %d) = %q: over %d runes", s, n, got, n)
			}
		}
	}
}
