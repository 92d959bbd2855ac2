package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// confirmDialog asks before a stop, an archive, a push or a pull request.
type confirmDialog struct {
	base
	op     opKind
	taskID string
	title  string
	body   []string
}

func (d *confirmDialog) update(ui dialogUI, msg tea.KeyMsg) (action, tea.Cmd) {
	if d.busy {
		return nil, nil
	}
	switch {
	case key.Matches(msg, ui.keys.Yes), d.err == "" && key.Matches(msg, ui.keys.Submit):
		switch d.op {
		case opStop:
			d.busy, d.err = true, ""
			return stopTask{taskID: d.taskID}, nil
		case opArchive:
			d.busy, d.err = true, ""
			return archiveTask{taskID: d.taskID}, nil
		case opPush:
			d.busy, d.err = true, ""
			return pushTask{taskID: d.taskID}, nil
		case opPR:
			d.busy, d.err = true, ""
			return pushTask{taskID: d.taskID, pr: true}, nil
		}
	case key.Matches(msg, ui.keys.No):
		return closeDialog{}, nil
	}
	return nil, nil
}

func (d *confirmDialog) view(ui dialogUI, w int) string {
	st := ui.st
	lines := []string{st.boxTitle.Render(d.title)}
	for _, b := range d.body {
		lines = append(lines, wrap(b, w)...)
	}
	lines = append(lines, "", st.helpKey.Render("y")+" "+d.op.String()+"   "+st.helpKey.Render("n/esc")+" cancel")
	if f := d.footer(st, w); f != "" {
		lines = append(lines, "", f)
	}
	return strings.Join(lines, "\n")
}

func (d *confirmDialog) help(k keyMap) []key.Binding { return []key.Binding{k.Yes, k.No} }
