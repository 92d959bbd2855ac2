package tui

import (
	"strings"
	"unicode"

	"github.com/charmbracelet/x/ansi"

	"github.com/kandev/kandev/core/textsafe"
)

// tabWidth is how many spaces a tab in agent output becomes.
const tabWidth = 4

// sanitize makes text from agents and the engine safe to lay out: the
// shared terminal cleaning (textsafe.Clean: escape sequences, controls,
// invalid UTF-8, bidi overrides), then tabs become spaces. Newlines are kept.
func sanitize(s string) string {
	s = textsafe.Clean(s)
	if strings.IndexByte(s, '\t') < 0 {
		return s
	}
	return strings.ReplaceAll(s, "\t", strings.Repeat(" ", tabWidth))
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

// hanging wraps s at word boundaries in w cells, indenting the lines after
// the first by indent cells (under a checkbox, say).
func hanging(s string, w, indent int) []string {
	first := wrap(s, w)
	if len(first) <= 1 || indent <= 0 {
		return first
	}
	rest := strings.TrimSpace(strings.TrimPrefix(s, first[0]))
	out := []string{first[0]}
	pad := strings.Repeat(" ", indent)
	for _, l := range wrap(rest, max(1, w-indent)) {
		out = append(out, pad+l)
	}
	return out
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
