package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// queueDialog shows what waits for the selected task's next turns and lets
// the operator drop one item or all of them: the way out when other tasks
// filled the queue. It shows the queue as of opening or the last drop.
type queueDialog struct {
	base
	taskID string
	title  string
	items  []api.QueuedItem
	ready  bool // the first listing arrived
	choice int
	note   string // what the last drop did
}

func (d *queueDialog) take(v api.QueueView) {
	d.items, d.ready = v.Items, true
	if d.choice >= len(d.items) {
		d.choice = max(len(d.items)-1, 0)
	}
}

// loaded takes the engine's answer to a listing or a drop.
func (d *queueDialog) loaded(msg queueMsg) action {
	if msg.err != nil {
		d.failed(msg.err)
		return nil
	}
	d.busy, d.err = false, ""
	d.take(msg.view)
	if msg.drop {
		d.note = fmt.Sprintf("dropped %d item(s)", len(msg.view.Dropped))
		return showStatus{text: fmt.Sprintf("task %s: %s from its queue", d.taskID, d.note)}
	}
	return nil
}

func (d *queueDialog) update(ui dialogUI, msg tea.KeyMsg) (action, tea.Cmd) {
	switch {
	case key.Matches(msg, ui.keys.Cancel), msg.Type == tea.KeyRunes && string(msg.Runes) == "q":
		return closeDialog{}, nil
	case d.busy || !d.ready:
		return nil, nil
	case msg.Type == tea.KeyUp || (msg.Type == tea.KeyRunes && string(msg.Runes) == "k"):
		d.choice = max(d.choice-1, 0)
	case msg.Type == tea.KeyDown || (msg.Type == tea.KeyRunes && string(msg.Runes) == "j"):
		d.choice = min(d.choice+1, max(len(d.items)-1, 0))
	case key.Matches(msg, ui.keys.DropOne) && len(d.items) > 0:
		d.busy, d.err, d.note = true, "", ""
		return dropQueued{taskID: d.taskID, in: api.DropQueueInput{ID: d.items[d.choice].ID}}, nil
	case key.Matches(msg, ui.keys.DropAll) && len(d.items) > 0:
		d.busy, d.err, d.note = true, "", ""
		return dropQueued{taskID: d.taskID, in: api.DropQueueInput{All: true}}, nil
	}
	return nil, nil
}

func (d *queueDialog) view(ui dialogUI, w int) string {
	st := ui.st
	lines := []string{st.boxTitle.Render(truncate("Queue of task "+d.taskID, w)), truncate(d.title, w), ""}
	switch {
	case !d.ready:
	case len(d.items) == 0:
		lines = append(lines, st.dim.Render("Nothing queued."))
	default:
		for i, it := range d.items {
			mark := "  "
			if i == d.choice {
				mark = st.fieldFocus.Render("> ")
			}
			kind := it.Kind
			if it.Interrupt {
				kind += "!"
			}
			head := fmt.Sprintf("%d. %-9s %s  ", it.Position, kind, senderLabel(it.Sender))
			lines = append(lines, mark+truncate(head+oneLine(it.Text), w-2))
		}
	}
	if d.note != "" {
		lines = append(lines, "", st.dim.Render(d.note))
	}
	lines = append(lines, "", st.helpKey.Render("x")+" drop it   "+st.helpKey.Render("X")+" drop all   "+
		st.helpKey.Render("↑↓")+" choose   "+st.helpKey.Render("esc")+" close")
	if f := d.footer(st, w); f != "" {
		lines = append(lines, "", f)
	}
	return strings.Join(lines, "\n")
}

func (d *queueDialog) help(k keyMap) []key.Binding {
	return []key.Binding{k.DropOne, k.DropAll, k.Choose, k.Cancel}
}

// senderLabel is who queued an item, as the tree names people and tasks.
func senderLabel(s core.By) string {
	if s.IsPerson() && !s.IsOperator() {
		return "@" + s.Name
	}
	return s.Label()
}
