package tui

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// tabWidth is how many spaces a tab in agent output becomes.
const tabWidth = 4

// sanitize makes text from agents and the engine safe to lay out: escape
// sequences (CSI, OSC, DCS...) are removed, tabs become spaces, carriage
// returns and other control characters are dropped, invalid UTF-8 becomes
// U+FFFD, and bidirectional overrides (which reorder what follows them on
// the terminal line) are removed. Newlines are kept.
func sanitize(s string) string {
	if isPlain(s) {
		return s
	}
	s = ansi.Strip(strings.ToValidUTF8(s, "\uFFFD"))
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '\n':
			b.WriteByte('\n')
		case r == '\t':
			b.WriteString(strings.Repeat(" ", tabWidth))
		case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
			// C0 and C1 controls, DEL: dropped.
		case isBidiControl(r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isPlain reports whether s is printable ASCII and newlines only, the
// common case, which needs no work.
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\n') || c >= 0x7f {
			return false
		}
	}
	return true
}

func isBidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c
}

// oneLine sanitizes s and folds it onto one line (titles, previews).
func oneLine(s string) string {
	s = sanitize(s)
	if !strings.ContainsRune(s, '\n') {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// width is the number of terminal cells s occupies.
func width(s string) int { return ansi.StringWidth(s) }

// truncate cuts s to at most w cells, ending with "…" when it cut.
// Wide characters are never split.
func truncate(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if width(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, "…")
}

// fit truncates or pads s with spaces to exactly w cells.
func fit(s string, w int) string {
	s = truncate(s, w)
	if pad := w - width(s); pad > 0 {
		s += strings.Repeat(" ", pad)
	}
	return s
}

// padLeft right-aligns s in w cells.
func padLeft(s string, w int) string {
	s = truncate(s, w)
	if pad := w - width(s); pad > 0 {
		s = strings.Repeat(" ", pad) + s
	}
	return s
}

// wrap breaks sanitized text into lines of at most w cells, at spaces
// where it can and inside words where it must. Trailing blank lines go.
func wrap(s string, w int) []string {
	if w < 1 {
		w = 1
	}
	s = strings.TrimRightFunc(s, unicode.IsSpace)
	if s == "" {
		return []string{""}
	}
	var out []string
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimRightFunc(line, unicode.IsSpace)
		if width(line) <= w {
			out = append(out, line)
			continue
		}
		for _, l := range strings.Split(ansi.Wrap(line, w, ""), "\n") {
			out = append(out, strings.TrimRightFunc(l, unicode.IsSpace))
		}
	}
	return out
}
