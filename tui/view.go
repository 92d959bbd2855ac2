package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/kandev/kandev/core"
)

// Layout and drawing. View does work only for what is visible.

type layout struct {
	wide            bool
	bodyH           int
	treeW, treeH    int
	detailW, detail int
	statusLines     []string
}

// minWidth and minHeight: below these the screen only says it is too small.
const (
	minWidth  = 40
	minHeight = 10
)

func (m *Model) layout() layout {
	var l layout
	l.statusLines = m.statusLines(m.w)
	l.bodyH = max(1, m.h-len(l.statusLines)-1)
	l.wide = m.w >= 120
	if l.wide {
		// The tree takes what its visible rows need, between a third and
		// eleven twentieths of the width; the detail pane has the rest, so
		// a tree of short titles leaves the detail its header whole.
		l.treeW = clamp(m.tree.need(m.tasks, l.bodyH, m.now), m.w/3, m.w*11/20)
		l.detailW = m.w - l.treeW - 1
		l.treeH, l.detail = l.bodyH, l.bodyH
	} else {
		l.treeW, l.detailW = m.w, m.w
		l.treeH = max(3, l.bodyH*2/5)
		l.detail = max(1, l.bodyH-l.treeH-1)
	}
	if m.zoom {
		l.detailW, l.detail = m.w, l.bodyH
	}
	return l
}

func (m *Model) logHeight() int { return m.logHeightIn(m.layout()) }

func (m *Model) logHeightIn(l layout) int {
	if m.zoom {
		return logHeight(len(zoomHeader(m.st, m.selectedTask(), l.detailW)), l.detail)
	}
	return logHeight(len(detailHeaderWith(m.st, m.detailTask(), &m.changes, l.detailW, l.detail, m.now)), l.detail)
}

// detailTask is the selected task as the detail pane shows it: with the
// questions its subtasks asked it that wait on the person it is with
// (ADR 0069), which the tasks the UI holds (summaries, events) do not
// carry.
func (m *Model) detailTask() *core.Task {
	t := m.selectedTask()
	if t == nil {
		return nil
	}
	cqs := m.childQuestions(t)
	if len(cqs) == 0 && len(t.ChildQuestions) == 0 {
		return t
	}
	tc := *t
	tc.ChildQuestions = cqs
	return &tc
}

func (m *Model) dialogWidth() int { return clamp(m.w-6, 30, 76) }

// View draws the screen; it does work only for what is visible.
func (m *Model) View() string {
	if m.w == 0 || m.h == 0 {
		return ""
	}
	if m.w < minWidth || m.h < minHeight {
		lines := wrap(fmt.Sprintf("kandev needs a bigger terminal: at least 80×24 (this one is %d×%d)", m.w, m.h), m.w)
		return strings.Join(lines[:min(len(lines), m.h)], "\n")
	}
	l := m.layout()
	var body []string
	if f, ok := m.dialog.(interface {
		fullView(dialogUI, int, int) []string
	}); ok {
		body = f.fullView(m.dialogUI(), m.w, l.bodyH)
	} else {
		if m.zoom {
			body = m.viewZoom(l)
		} else {
			body = m.viewBody(l)
		}
		if m.dialog != nil {
			body = m.overlay(body, l)
		}
	}
	out := make([]string, 0, m.h)
	out = append(out, body...)
	out = append(out, l.statusLines...)
	out = append(out, m.helpBar())
	return strings.Join(out, "\n")
}

func (m *Model) viewBody(l layout) []string {
	task := m.detailTask()
	tree := m.tree.view(m.st, m.tasks, l.treeW, l.treeH, m.now, m.frame, !m.focusLog)
	det := m.detail.view(m.st, task, &m.changes, l.detailW, l.detail, m.focusLog, m.now)
	if l.wide {
		sep := m.st.divider.Render("│")
		out := make([]string, l.bodyH)
		for i := range out {
			out[i] = tree[i] + sep + det[i]
		}
		return out
	}
	out := make([]string, 0, l.bodyH)
	out = append(out, tree...)
	out = append(out, m.st.divider.Render(strings.Repeat("─", m.w)))
	out = append(out, det...)
	return out[:l.bodyH]
}

// overlay draws the open dialog's box centered over the body.
func (m *Model) overlay(body []string, l layout) []string {
	dw := m.dialogWidth()
	box := m.st.box.Width(dw - 2).Render(m.dialog.view(m.dialogUI(), dw-4))
	lines := strings.Split(box, "\n")
	if len(lines) > len(body) {
		lines = lines[:len(body)]
	}
	bw := 0
	for _, ln := range lines {
		bw = max(bw, width(ln))
	}
	x := max(0, (m.w-bw)/2)
	y := max(0, (len(body)-len(lines))/2)
	for i, ln := range lines {
		row := body[y+i]
		left := ansi.Truncate(row, x, "")
		if pad := x - width(left); pad > 0 {
			left += strings.Repeat(" ", pad)
		}
		right := ansi.Cut(row, x+bw, m.w)
		body[y+i] = left + m.st.reset + ln + m.st.reset + right
	}
	return body
}

func (m *Model) statusLines(w int) []string {
	if w <= 0 {
		return nil
	}
	st := m.st
	var left string
	switch m.conn {
	case connConnecting:
		left = st.dim.Render("○ connecting to the daemon…")
	case connLive:
		left = st.live.Render("● live")
	case connLost:
		if m.daemonDown {
			left = st.lost.Render("✗ the daemon stopped") + " — " + st.helpKey.Render(m.keys.Restart.Help().Key) +
				fmt.Sprintf(" starts it again; watching for one (try %d, every %s)", m.attempt, m.retryIn)
		} else {
			left = st.lost.Render("✗ daemon connection lost") + fmt.Sprintf(" — %s; reconnecting (try %d, every %s)", m.connErr, m.attempt, m.retryIn)
		}
	}
	c := m.tasks.counts
	running := fmt.Sprintf("%d running", c.running)
	if c.paused > 0 {
		running += fmt.Sprintf(" (+%d paused on you)", c.paused)
	}
	tasks := fmt.Sprintf("%d tasks", c.total)
	if c.total == 1 {
		tasks = "1 task"
	}
	segs := []string{tasks, running,
		fmt.Sprintf("?you %d", c.askYou), fmt.Sprintf("?parent %d", c.askParent)}
	if extra := c.yours - c.askYou; extra > 0 {
		segs = append(segs, fmt.Sprintf("@you %d", extra))
	}
	filterLabel := ""
	if m.typing {
		left = "filter / " + m.filterInput.View()
	} else if m.filter.active() {
		f := "filter:"
		if m.filter.text != "" {
			f += " \"" + m.filter.text + "\""
		}
		if m.filter.state != stateAll {
			f += " [" + m.filter.state.String() + "]"
		}
		filterLabel = f
	}
	// The counts say what a filter hides, so they keep their place: a
	// filter's label that does not fit beside them takes a line of its own.
	// Otherwise the counts give way, last first, when the line is full.
	right := strings.Join(segs, " · ")
	labelLine := ""
	if filterLabel != "" {
		if width(left)+width(filterLabel)+3+width(right)+2 <= w {
			right = filterLabel + " · " + right
		} else {
			labelLine = fit(filterLabel, w)
		}
	}
	for len(segs) > 1 && width(left)+width(right)+2 > w {
		segs = segs[:len(segs)-1]
		right = strings.Join(segs, " · ")
	}
	var first string
	if gap := w - width(left) - width(right); gap >= 2 {
		first = left + strings.Repeat(" ", gap) + right
	} else {
		first = fit(left, w)
	}
	out := []string{fit(first, w)}
	if labelLine != "" {
		out = append(out, labelLine)
	}
	if m.flash != "" {
		out = append(out, st.badgeYou.Render(fit("» "+oneLine(m.flash), w)))
	}
	if m.status != "" {
		prefix := "· "
		if m.statusErr {
			prefix = "✗ "
		}
		lines := wrap(prefix+oneLine(m.status), w)
		if len(lines) > 3 {
			lines = append(lines[:2], truncate(lines[2]+" "+strings.Join(lines[3:], " "), w))
		}
		for i, ln := range lines {
			if m.statusErr {
				ln = st.errText.Render(ln)
			} else {
				ln = st.okText.Render(ln)
			}
			if i < 3 {
				out = append(out, ln)
			}
		}
	}
	return out
}

func (m *Model) helpBar() string {
	bs := m.keys.shortHelp()
	if m.dialog != nil {
		bs = items(m.dialog.help(m.keys)...)
	} else if m.typing || (m.zoom && m.search.typing) {
		bs = items(m.keys.Submit, m.keys.Cancel)
	} else if m.zoom {
		bs = m.keys.zoomHelp()
	}
	if m.dialog == nil && m.conn == connLost && m.daemonDown {
		bs = append([]barItem{{m.keys.Restart, "start daemon"}}, bs...)
	}
	line := helpLine(m.st, bs, m.w)
	if gap := m.w - width(line); gap > 0 {
		line += strings.Repeat(" ", gap)
	}
	return line
}
