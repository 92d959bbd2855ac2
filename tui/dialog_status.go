package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
)

// statusDialog confirms a status change, done preselected; the other
// statuses are a choice away. The engine decides which moves are legal and
// its refusal stays in the dialog.
type statusDialog struct {
	base
	taskID  string
	title   string
	from    core.Status
	holder  string // who has the task now, as the tree says it
	running bool   // an agent run is live
	choice  int    // index in core.Statuses
}

func newStatusDialog(id int, t *core.Task) *statusDialog {
	d := &statusDialog{base: base{id: id}, taskID: t.ID, title: oneLine(t.Title), from: t.Status,
		holder: assigneeLabel(t), running: t.Session != nil && t.Session.State.Live()}
	d.choice = statusIndex(core.StatusDone)
	return d
}

func statusIndex(s core.Status) int {
	for i, st := range core.Statuses {
		if st == s {
			return i
		}
	}
	return 0
}

func (d *statusDialog) to() core.Status { return core.Statuses[d.choice] }

func (d *statusDialog) update(ui dialogUI, msg tea.KeyMsg) (action, tea.Cmd) {
	if d.busy {
		return nil, nil
	}
	n := len(core.Statuses)
	move := func(i int) {
		if i = (i + n) % n; i != d.choice {
			d.choice, d.err = i, ""
		}
	}
	switch {
	case key.Matches(msg, ui.keys.Yes), d.err == "" && key.Matches(msg, ui.keys.Submit):
		d.busy, d.err = true, ""
		return setTaskStatus{taskID: d.taskID, from: d.from, to: d.to()}, nil
	case key.Matches(msg, ui.keys.No):
		return closeDialog{}, nil
	case msg.Type == tea.KeyUp || msg.Type == tea.KeyShiftTab:
		move(d.choice - 1)
	case msg.Type == tea.KeyDown || msg.Type == tea.KeyTab:
		move(d.choice + 1)
	case msg.Type == tea.KeyRunes && len(msg.Runes) == 1:
		switch r := msg.Runes[0]; {
		case r == 'k':
			move(d.choice - 1)
		case r == 'j':
			move(d.choice + 1)
		case r >= '1' && int(r-'0') <= n:
			move(int(r - '1'))
		}
	}
	return nil, nil
}

func (d *statusDialog) view(ui dialogUI, w int) string {
	st := ui.st
	to := d.to()
	title := fmt.Sprintf("Task %s: %s → %s?", d.taskID, d.from, to)
	if to == core.StatusDone {
		title = fmt.Sprintf("Mark task %s done?", d.taskID)
	}
	lines := []string{st.boxTitle.Render(truncate(title, w)), truncate(d.title, w)}
	g, _ := statusGlyph(d.from)
	lines = append(lines, st.dim.Render(truncate(fmt.Sprintf("now %s %s · with %s", g, d.from, d.holder), w)), "")
	for i, s := range core.Statuses {
		mark := "  "
		if i == d.choice {
			mark = st.fieldFocus.Render("> ")
		}
		g, _ := statusGlyph(s)
		text := fmt.Sprintf("%d) %s %s", i+1, g, s)
		switch {
		case s == d.from:
			text += st.dim.Render("  (now)")
		case s == core.StatusDone:
			text += st.dim.Render("  signs it off")
		}
		lines = append(lines, "  "+mark+truncate(text, w-4))
	}
	lines = append(lines, "")
	var note []string
	switch to {
	case core.StatusDone, core.StatusCancelled:
		if d.running {
			note = append(note, "Its agent is running: "+string(to)+" halts it (the run is cancelled).")
		} else {
			note = append(note, "Done and cancelled halt a running agent; none runs now.")
		}
		note = append(note, "A pending question goes stale; its parent's agent and tasks waiting on it are woken.")
	default:
		note = append(note, "Only the status changes: no agent is started or stopped.")
	}
	for _, l := range note {
		lines = append(lines, wrap(l, w)...)
	}
	lines = append(lines, "", st.helpKey.Render("y/enter")+" set "+string(to)+"   "+st.helpKey.Render("↑↓/1-5")+" choose   "+st.helpKey.Render("n/esc")+" cancel")
	if f := d.footer(st, w); f != "" {
		lines = append(lines, "", f)
	}
	return strings.Join(lines, "\n")
}

func (d *statusDialog) help(k keyMap) []key.Binding {
	return []key.Binding{k.SetStatus, k.Choose, k.CancelDialog}
}
