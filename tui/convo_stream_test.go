package tui

import (
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// A streamed entry that grows by appends is laid out as it would be
// whole (renderStreamed keeps its lines up to a stable point): for text
// with escape sequences, controls, tabs, carriage returns, wide and
// invalid characters and trailing blanks cut anywhere, at widths where
// the head shares the first line and where it takes its own, in colour
// (dimmed thoughts) and not.
func TestStreamedEntryGrowsAsLaidOutWhole(t *testing.T) {
	colour := lipgloss.NewRenderer(nil)
	colour.SetColorProfile(termenv.ANSI256)
	pieces := []string{"word ", "words and more words ", "\n", "\n\n", "  \n", "\t", "tab\there", "\r", "\r\n",
		"\x1b]0;ti", "tle\x07", "\x1b[31", "mred\x1b[0m", "日本語のテキスト", "\xff", "\xe6\x97", "\xa5", "@1234567890\n",
		"a-very-long-unbroken-token-that-must-wrap-somewhere-in-the-pane", "   ", "\u202e", "end."}
	for _, st := range []styles{testStyles(), newStyles(colour, false)} {
		for _, w := range []int{12, 30, 80} {
			for _, kind := range []core.MessageKind{core.MsgAgent, core.MsgThought} {
				for seed := int64(1); seed <= 20; seed++ {
					r := rand.New(rand.NewSource(seed))
					c := &conversation{}
					c.reset("t1")
					first := pieces[r.Intn(len(pieces))]
					c.merge(core.Message{Seq: 7, TaskID: "t1", Kind: kind, Text: first, CreatedAt: testNow, UpdatedAt: testNow})
					c.render(st, w, time.UTC)
					text := first
					for step := 0; step < 60; step++ {
						var b strings.Builder
						for range 1 + r.Intn(4) {
							b.WriteString(pieces[r.Intn(len(pieces))])
						}
						a := core.MessageAppend{Seq: 7, TaskID: "t1", Kind: kind, Offset: len(text), Text: b.String(), UpdatedAt: testNow}
						text += a.Text
						if c.appendText(a) != 0 {
							t.Fatal("an append that joins asked for a read")
						}
						c.render(st, w, time.UTC)
						whole := &conversation{}
						whole.reset("t1")
						whole.merge(c.msgs[0])
						whole.render(st, w, time.UTC)
						if !slices.Equal(c.lines, whole.lines) {
							t.Fatalf("width %d, %s, seed %d, step %d: text %q\ngrown: %q\nwhole: %q", w, kind, seed, step, text, c.lines, whole.lines)
						}
					}
				}
			}
		}
	}
}

// Plain streamed text is laid out only from its stable point on: what
// was laid out before it is kept.
func TestStreamedEntryKeepsItsLines(t *testing.T) {
	st := testStyles()
	c := &conversation{}
	c.reset("t1")
	c.merge(core.Message{Seq: 3, TaskID: "t1", Kind: core.MsgAgent, Text: "@1\n", CreatedAt: testNow, UpdatedAt: testNow})
	c.render(st, 80, time.UTC)
	text := "@1\n"
	for i := 2; i <= 500; i++ {
		s := "@" + strings.Repeat("x", i%7) + "\n"
		a := core.MessageAppend{Seq: 3, TaskID: "t1", Kind: core.MsgAgent, Offset: len(text), Text: s, UpdatedAt: testNow}
		text += s
		c.appendText(a)
		c.render(st, 80, time.UTC)
	}
	g := c.grown[3]
	if g.stable != len(text) || g.lines != 500 || g.text != len(text) {
		t.Fatalf("the entry's layout should be kept up to its last line: %+v (text %d bytes)", g, len(text))
	}
	if len(c.cache[0]) != 500 {
		t.Fatalf("want 500 lines, got %d", len(c.cache[0]))
	}
}

// BenchmarkStreamedAppend is one append (a 50 ms batch of an agent's
// stream) to the next frame, onto an entry of 6,000 lines: the TUI
// following one of `kandev-bench`'s streaming agents half a minute in.
func BenchmarkStreamedAppend(b *testing.B) {
	tasks := benchForest(100)
	id := tasks[0].ID
	m := loadedModel(b, 160, 50, tasks)
	m.Update(convoLoadMsg{gen: m.detail.gen})
	text := strings.Repeat("@1764590000000000000\n", 6000)
	entry := core.Message{Seq: 1, TaskID: id, Kind: core.MsgAgent, Text: text, CreatedAt: testNow, UpdatedAt: testNow}
	m.Update(convoPageMsg{gen: m.detail.gen, taskID: id, kind: pageTail,
		page: api.ConversationPage{TaskID: id, Messages: []core.Message{entry}, First: 1, Next: 1}})
	sink = m.View()
	chunk := strings.Repeat("@1764590000000000000\n", 10)
	off := len(text)
	b.ReportAllocs()
	for b.Loop() {
		a := core.MessageAppend{Seq: 1, TaskID: id, Kind: core.MsgAgent, Offset: off, Text: chunk, UpdatedAt: testNow}
		off += len(chunk)
		m.Update(eventsMsg{gen: 1, events: []core.Event{{Type: core.EventMessageAppended, TaskID: id, Append: &a}}})
		sink = m.View()
	}
}
