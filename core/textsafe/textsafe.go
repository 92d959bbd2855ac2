// Package textsafe makes text that came from agents, tasks and other
// untrusted sources safe to write to a terminal. The CLI's text output and
// the TUI share it, so both show the same thing for the same bytes.
package textsafe

import (
	"io"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Clean removes what a terminal would act on instead of print: escape
// sequences (CSI, OSC such as window titles, OSC 52 clipboard writes and
// OSC 8 links, DCS, APC...) are removed whole; other C0 controls, DEL and
// the C1 controls U+0080–U+009F are dropped; invalid UTF-8 becomes U+FFFD;
// bidirectional overrides, which reorder the rest of the terminal line,
// are removed. Newlines and tabs are kept.
func Clean(s string) string {
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
		case r == '\n', r == '\t':
			b.WriteRune(r)
		case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		case isBidiControl(r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Line cleans s and folds it onto one line: runs of spaces, tabs and
// newlines become one space. For titles and names in one-line layouts.
func Line(s string) string {
	s = Clean(s)
	if !strings.ContainsAny(s, "\n\t") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// isPlain reports whether s is printable ASCII, newlines and tabs only,
// the common case, which needs no work.
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\n' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

func isBidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c
}

// Writer cleans everything written through it (see Clean). A multi-byte
// character cut between two writes is held back until its end arrives, so
// buffered output is not turned into U+FFFD; Flush writes what is held. An
// escape sequence cut between writes loses its ESC in the first part and
// prints the rest as text: never an escape reaches the terminal.
type Writer struct {
	w    io.Writer
	tail []byte
}

// NewWriter returns a Writer that cleans onto w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write implements io.Writer. It reports len(p) written when the cleaned
// text was written, since the caller's bytes are consumed even when
// cleaning shortened them.
func (w *Writer) Write(p []byte) (int, error) {
	if len(w.tail) == 0 && isPlain(string(p)) {
		return w.w.Write(p)
	}
	buf := append(w.tail, p...)
	cut := len(buf) - incompleteTail(buf)
	out := Clean(string(buf[:cut]))
	w.tail = append([]byte(nil), buf[cut:]...)
	if _, err := io.WriteString(w.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a held incomplete character (as U+FFFD: it never ended).
func (w *Writer) Flush() error {
	if len(w.tail) == 0 {
		return nil
	}
	out := Clean(string(w.tail))
	w.tail = nil
	_, err := io.WriteString(w.w, out)
	return err
}

// incompleteTail is how many bytes at the end of b begin a UTF-8
// character that is not complete yet.
func incompleteTail(b []byte) int {
	for n := 1; n <= utf8.UTFMax-1 && n <= len(b); n++ {
		c := b[len(b)-n]
		if c < 0x80 {
			return 0
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(b[len(b)-n:]) {
				return 0
			}
			return n
		}
	}
	return 0
}
