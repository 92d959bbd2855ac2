package cmd

import "testing"

// A task title is untrusted: in a completion menu an escape sequence would
// reach the terminal, and a tab or newline would split the candidate.
func TestCompletionDescriptionIsOneCleanLine(t *testing.T) {
	for _, tc := range []struct{ value, desc, want string }{
		{"abc123", "Fix it", "abc123\tFix it"},
		{"abc123", "title \x1b]0;pwned\x07 here", "abc123\ttitle here"},
		{"abc123", "two\nlines\tand tab", "abc123\ttwo lines and tab"},
		{"abc123", "\x1b[31m", "abc123"},
	} {
		if got := described(tc.value, tc.desc); got != tc.want {
			t.Errorf("described(%q, %q) = %q, want %q", tc.value, tc.desc, got, tc.want)
		}
	}
}
