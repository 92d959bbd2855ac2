package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textarea"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// messageDialog sends the selected task a message, queued or as an
// interrupt.
type messageDialog struct {
	base
	taskID    string
	title     string
	input     textarea.Model
	interrupt bool
	// canInterrupt: the operator may interrupt this task
	// (core.MayInterrupt, the engine's rule).
	canInterrupt bool
	running      bool
	asks         bool // the task has a pending question, which a message supersedes
}

func newMessageDialog(ui dialogUI, id int, t *core.Task) *messageDialog {
	d := &messageDialog{base: base{id: id}, taskID: t.ID, title: oneLine(t.Title),
		canInterrupt: core.MayInterrupt(core.OperatorActor(), *t), running: isRunning(t),
		asks: t.PendingQuestion != nil && t.PendingQuestion.Status == core.QuestionPending}
	d.input = newTextArea(ui.st, "message to the agent", ui.keys.Newline)
	d.resize(ui)
	d.input.Focus()
	return d
}

// resize fits the text box to the dialog: the dialog's width, and as many
// lines as the screen leaves room for (up to messageRows; more scroll).
func (d *messageDialog) resize(ui dialogUI) {
	d.input.SetWidth(ui.width - 6)
	d.input.SetHeight(clamp(ui.height-19, 1, messageRows))
}

func (d *messageDialog) update(ui dialogUI, msg tea.KeyMsg) (action, tea.Cmd) {
	if d.busy {
		return nil, nil
	}
	switch {
	case key.Matches(msg, ui.keys.Cancel):
		return closeDialog{}, nil
	case msg.Type == tea.KeyTab:
		if d.canInterrupt {
			d.interrupt = !d.interrupt
		}
		return nil, nil
	case key.Matches(msg, ui.keys.Submit):
		in := api.MessageInput{Text: strings.TrimSpace(d.input.Value()), Delivery: api.DeliveryQueued}
		if d.interrupt {
			in.Delivery = api.DeliveryInterrupt
		}
		d.busy, d.err = true, ""
		return messageTask{taskID: d.taskID, in: in}, nil
	}
	var cmd tea.Cmd
	d.input, cmd = d.input.Update(msg)
	return nil, cmd
}

func (d *messageDialog) view(ui dialogUI, w int) string {
	st := ui.st
	lines := []string{st.boxTitle.Render(truncate("Message task "+d.taskID+" · "+d.title, w)), ""}
	for i, row := range strings.Split(d.input.View(), "\n") {
		mark := "  "
		if i == 0 {
			mark = "> "
		}
		lines = append(lines, truncate(mark+row, w))
	}
	lines = append(lines, "")
	if d.canInterrupt {
		note := "queued: delivered when the current turn ends"
		if d.interrupt {
			note = "cancels the running turn and delivers this instead"
			if !d.running {
				note = "no turn is running: it goes first in the queue"
			}
		}
		lines = append(lines, hanging(checkbox(d.interrupt)+" interrupt (tab) — "+note, w, 4)...)
	}
	if d.asks {
		lines = append(lines, hanging("Its pending question is superseded by this message.", w, 0)...)
	}
	// The keys take one line at 80 columns; what a message does is said above.
	hint := "enter send · " + ui.keys.Newline.Help().Key + " new line · esc cancel"
	lines = append(lines, st.dim.Render(truncate(hint, w)))
	if f := d.footer(st, w); f != "" {
		lines = append(lines, "", f)
	}
	return strings.Join(lines, "\n")
}

func (d *messageDialog) help(k keyMap) []key.Binding {
	return []key.Binding{k.Submit, k.Newline, k.Interrupt, k.Cancel}
}
