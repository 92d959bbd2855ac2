package tui

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
)

// flashFor is how long the status line says a task needs you.
const flashFor = 6 * time.Second

// noticeFor is how long the status line says what the daemon the UI
// started resumed (Options.Notice).
const noticeFor = 20 * time.Second

// flashEndMsg ends a status-line flash, unless a newer one replaced it.
type flashEndMsg struct{ text string }

// yours: the operator must act on t now: it is their turn or it asks them.
// (An interrupted task waits on them too, but nothing announces it: it
// was so when the UI started.)
func yours(t *core.Task) bool {
	return t != nil && !t.Archived && !t.Status.Terminal() && (t.YourTurn || asksYou(t))
}

// notifyYou tells the operator that t needs them: a bell and a
// status-line flash. Desktop notifications come from the daemon
// (core/notify), with or without a TUI.
func (m *Model) notifyYou(t *core.Task) tea.Cmd {
	why := "needs you"
	if asksYou(t) {
		why = "asks you a question"
	} else if len(t.ChildQuestions) > 0 {
		// A subtask asked it while it is with you (ADR 0069).
		why = "has a question from a subtask for you"
	}
	text := "task " + t.ID + " " + why + ": " + oneLine(t.Title)
	m.flash, m.flashTask = text, t.ID
	cmds := []tea.Cmd{m.after(flashFor, func(time.Time) tea.Msg { return flashEndMsg{text: text} })}
	if !m.opts.NoBell && m.opts.Bell != nil {
		w := m.opts.Bell
		// Written around bubbletea's renderer: with the alternate screen
		// on, tea.Printf prints nothing, and a BEL moves no cursor.
		cmds = append(cmds, func() tea.Msg {
			_, _ = w.Write([]byte("\a"))
			return nil
		})
	}
	return tea.Batch(cmds...)
}
