package tui

import (
	"strings"
	"time"
	"unicode"

	"github.com/kandev/kandev/core"
)

// A streamed entry (an agent's message or thought) grows by appends,
// twenty a second while an agent streams, to thousands of lines. Laying
// it out whole for each append cost the square of its length; instead
// its lines are kept up to a stable point that no text appended after
// it can change, and only what follows is laid out again.
//
// The point is just after a newline that ends a line with a non-space
// character, where everything before it is printable ASCII, newlines and
// tabs. Before such a point sanitize changes nothing but tabs (so no
// escape sequence begins there and runs on into the appended text), and
// wrap lays out each line by itself and trims only the end of the whole
// text, which lies after it: the entry's lines are the lines of the text
// before the point followed by the lines of the text after it.

// growth is what renderStreamed keeps of a streamed entry's layout: the
// width, the bytes of text laid out, the stable point (0: none yet) and
// how many of its lines come from the text before it.
type growth struct {
	w, text, stable, lines int
}

func streamedKind(k core.MessageKind) bool { return k == core.MsgAgent || k == core.MsgThought }

// renderStreamed lays out a streamed entry, reusing prev (its lines as g
// describes them) when it can. It returns the lines and what to keep.
func renderStreamed(st styles, m core.Message, w int, loc *time.Location, prev []string, g growth) ([]string, growth) {
	if prev == nil || g.w != w || g.text > len(m.Text) || g.lines > len(prev) || g.stable > len(m.Text) {
		prev, g = nil, growth{}
	}
	stable := stablePoint(m.Text, g.stable)
	if stable == 0 {
		return renderMessage(st, m, w, loc), growth{w: w, text: len(m.Text)}
	}
	l, _ := layoutOf(st, m, w, loc)
	var out []string
	if g.stable == 0 {
		out = l.lines(nil, sanitize(m.Text[:stable-1]), true)
	} else {
		out = prev[:g.lines] // laid out already; prev is replaced, so its array is reused
		if stable > g.stable {
			out = l.lines(out, sanitize(m.Text[g.stable:stable-1]), false)
		}
	}
	n := len(out)
	if rest := sanitize(m.Text[stable:]); strings.TrimRightFunc(rest, unicode.IsSpace) != "" {
		out = l.lines(out, rest, false)
	}
	return out, growth{w: w, text: len(m.Text), stable: stable, lines: n}
}

// stablePoint is the last stable point of text at or after from (itself
// a stable point, or 0), or from when there is none further.
func stablePoint(text string, from int) int {
	p := from
	for i := from; i < len(text); i++ {
		c := text[i]
		if (c < 0x20 && c != '\n' && c != '\t') || c >= 0x7f {
			break
		}
		if c == '\n' && i > 0 && !isSpaceByte(text[i-1]) {
			p = i + 1
		}
	}
	return p
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// pruneGrown forgets the layouts of entries the window no longer holds.
func (c *conversation) pruneGrown() {
	keep := make(map[int64]growth, len(c.msgs))
	for i := range c.msgs {
		if g, ok := c.grown[c.msgs[i].Seq]; ok {
			keep[c.msgs[i].Seq] = g
		}
	}
	c.grown = keep
}
