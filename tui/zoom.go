package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/kandev/kandev/core"
)

// The full-screen conversation (z): the selected task's log over the
// whole screen. It is the detail pane's own conversation (convo.go),
// rendered at the screen's width: the same window, paging, following and
// scroll position, so whatever changes how entries arrive changes both.
// It follows new output unless scrolled up; / searches what is loaded.

// logSearch is a search of the conversation's loaded lines.
type logSearch struct {
	input  textinput.Model
	typing bool   // the search input has the keyboard
	query  string // lower case; "" is no search
	at     logPos // the match last jumped to
	found  bool   // at is a match
	hits   int    // matches when last searched
	nth    int    // which of them at is (1-based)
}

// zoomHeader is the zoomed view's top: the task's title, then its state
// in one line, then a question waiting on the operator.
func zoomHeader(st styles, t *core.Task, w int) []string {
	if t == nil {
		return []string{st.dim.Render(fit("no task selected", w))}
	}
	stage := core.StageOf(t)
	glyph, _ := stageGlyph(stage)
	parts := []string{t.ID, glyph + " " + string(stage)}
	if a := t.Assignee; a != nil {
		parts = append(parts, assigneeLabel(t))
	}
	if s := t.Session; s != nil {
		parts = append(parts, "session "+strings.ReplaceAll(string(s.State), "_", " "))
	}
	if t.Halted {
		parts = append(parts, "STOPPED")
	}
	out := []string{st.title.Render(truncate(oneLine(t.Title), w)), truncate(strings.Join(parts, " · "), w)}
	if q := t.PendingQuestion; q != nil && q.Status == core.QuestionPending && q.Kind.ForPerson() {
		out = append(out, truncate(st.badgeYou.Render("?you")+" (a to answer): "+firstPrompt(q), w))
	}
	return out
}

func (m *Model) zoomIn() {
	if m.needTask("show full screen") == nil {
		return
	}
	m.zoom = true
	m.setStatus("", false)
}

func (m *Model) zoomOut() {
	m.zoom = false
	m.search = logSearch{}
}

// onZoomKey handles the keys the zoomed view owns; it reports false for
// the rest (the task's actions: a, m, the shell, ...).
func (m *Model) onZoomKey(msg tea.KeyMsg) (tea.Cmd, bool) {
	k := m.keys
	s := &m.search
	if s.typing {
		switch msg.Type {
		case tea.KeyEsc:
			*s = logSearch{}
		case tea.KeyEnter:
			s.typing = false
			s.input.Blur()
			s.query = strings.ToLower(strings.TrimSpace(s.input.Value()))
			s.found = false
			m.findNext(1)
		default:
			var cmd tea.Cmd
			s.input, cmd = s.input.Update(msg)
			return cmd, true
		}
		return nil, true
	}
	switch {
	case key.Matches(msg, k.Zoom):
		m.zoomOut()
	case key.Matches(msg, k.Cancel):
		switch {
		case m.status != "":
			m.setStatus("", false)
		case s.query != "":
			*s = logSearch{}
		default:
			m.zoomOut()
		}
	case key.Matches(msg, k.Search):
		s.typing = true
		s.input = newInput(m.st, "search the log", 30)
		s.input.SetValue(s.query)
		s.input.CursorEnd()
		return s.input.Focus(), true
	case s.query != "" && key.Matches(msg, k.SearchNext):
		m.findNext(1)
	case s.query != "" && key.Matches(msg, k.SearchPrev):
		m.findNext(-1)
	case key.Matches(msg, k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom):
		return m.onLogKey(msg), true
	case key.Matches(msg, k.Quit), key.Matches(msg, k.Help), key.Matches(msg, k.Answer), key.Matches(msg, k.Message),
		key.Matches(msg, k.HandOn), key.Matches(msg, k.Done), key.Matches(msg, k.Stop), key.Matches(msg, k.Start),
		key.Matches(msg, k.Shell), key.Matches(msg, k.Editor), key.Matches(msg, k.Diff), key.Matches(msg, k.Restart):
		return nil, false
	}
	return nil, true // the tree's keys do nothing here
}

// matchLines are the log lines (of what is loaded) that hold the query.
func (m *Model) matchLines() []int {
	q := m.search.query
	var out []int
	for i, l := range m.detail.convo.lines {
		if strings.Contains(strings.ToLower(ansi.Strip(l)), q) {
			out = append(out, i)
		}
	}
	return out
}

// findNext jumps to the next (dir 1) or previous (-1) match after the one
// last shown, wrapping, and scrolls it into view a third of the way down.
func (m *Model) findNext(dir int) {
	s := &m.search
	hits := m.matchLines()
	s.hits = len(hits)
	if len(hits) == 0 {
		s.found = false
		return
	}
	c := &m.detail.convo
	from := m.detail.start(m.logHeight())
	if s.found {
		from = c.lineOf(s.at)
	} else if dir > 0 {
		from-- // the first match at or after the top of the screen
	} else {
		from += m.logHeight()
	}
	pick := -1
	if dir > 0 {
		for i, h := range hits {
			if h > from {
				pick = i
				break
			}
		}
		if pick < 0 {
			pick = 0
		}
	} else {
		for i := len(hits) - 1; i >= 0; i-- {
			if hits[i] < from {
				pick = i
				break
			}
		}
		if pick < 0 {
			pick = len(hits) - 1
		}
	}
	line := hits[pick]
	s.at, s.found, s.nth = c.posOf(line), true, pick+1
	lh := m.logHeight()
	d := &m.detail
	// Near the end this follows the output again, with the match still
	// on screen.
	d.setStart(line-lh/3, lh)
}

// viewZoom draws the zoomed conversation in the body's rows.
func (m *Model) viewZoom(l layout) []string {
	st := m.st
	d := &m.detail
	w := m.w
	out := zoomHeader(st, m.selectedTask(), w)
	lh := m.logHeightIn(l)
	// The search's state first, then the log's as the pane words it.
	label := d.stateLabel("")
	switch {
	case m.search.typing:
		label = " search / " + m.search.input.View() + " "
	case m.search.query != "" && m.search.hits == 0:
		label = fmt.Sprintf(" no match for %q ", m.search.query)
	case m.search.query != "":
		label = fmt.Sprintf(" %q %d/%d (n/N) ", m.search.query, m.search.nth, m.search.hits)
	case label == "":
		label = " conversation · following "
	}
	line := "━━" + label
	out = append(out, st.divider.Render(truncate(line+strings.Repeat("━", max(0, w-width(line))), w)))
	if lh > 0 {
		lines := d.convo.lines
		s := d.start(lh)
		end := min(len(lines), s+lh)
		hit := -1
		if m.search.found && m.search.query != "" {
			hit = d.convo.lineOf(m.search.at)
		}
		for i := s; i < end; i++ {
			if i == hit {
				out = append(out, st.searchHit.Render(fit(ansi.Strip(lines[i]), w)))
				continue
			}
			out = append(out, lines[i])
		}
	}
	for i := range out {
		if gap := w - width(out[i]); gap > 0 {
			out[i] += strings.Repeat(" ", gap)
		}
	}
	for len(out) < l.bodyH {
		out = append(out, strings.Repeat(" ", w))
	}
	return out[:l.bodyH]
}

// zoomHelp is the zoomed view's help bar.
func (k keyMap) zoomHelp() []barItem {
	return []barItem{
		{k.Choose, "scroll"}, {k.Search, "search"}, {k.SearchNext, "next/prev"}, {k.Bottom, "follow"},
		{k.Answer, "answer"}, {k.Message, "msg"}, {k.Shell, "shell"}, {k.Editor, "editor"}, {k.Zoom, "back"},
	}
}
