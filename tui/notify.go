package tui

import (
	"context"
	"os/exec"
	"runtime"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
)

// flashFor is how long the status line says a task needs you.
const flashFor = 6 * time.Second

// flashEndMsg ends a status-line flash, unless a newer one replaced it.
type flashEndMsg struct{ text string }

// yours: the operator must act on t now: it is their turn or it asks them.
// (An interrupted task waits on them too, but nothing announces it: it
// was so when the UI started.)
func yours(t *core.Task) bool {
	return t != nil && !t.Archived && !t.Status.Terminal() && (t.YourTurn || asksYou(t))
}

// newlyYours says whether a change from before to after should tell the
// operator: the task became theirs, or it asks them a new question.
func newlyYours(before, after *core.Task) bool {
	if !yours(after) {
		return false
	}
	if !yours(before) {
		return true
	}
	return asksYou(after) && (!asksYou(before) || before.PendingQuestion.ID != after.PendingQuestion.ID)
}

// notifyYou tells the operator that t needs them: a bell, a status-line
// flash, and a desktop notification when enabled.
func (m *Model) notifyYou(t *core.Task) tea.Cmd {
	why := "needs you"
	if asksYou(t) {
		why = "asks you a question"
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
	if notify := m.opts.Notify; notify != nil {
		ctx := m.ctx
		cmds = append(cmds, func() tea.Msg {
			notify(ctx, "kandev", text)
			return nil
		})
	}
	return tea.Batch(cmds...)
}

// desktopNotifier returns a notifier through notify-send (Linux) or
// osascript (macOS), or nil when neither exists.
func desktopNotifier() func(ctx context.Context, title, body string) {
	if runtime.GOOS == "darwin" {
		if p, err := exec.LookPath("osascript"); err == nil {
			return func(ctx context.Context, title, body string) {
				script := "display notification " + appleString(body) + " with title " + appleString(title)
				_ = exec.CommandContext(ctx, p, "-e", script).Run()
			}
		}
		return nil
	}
	if p, err := exec.LookPath("notify-send"); err == nil {
		return func(ctx context.Context, title, body string) {
			_ = exec.CommandContext(ctx, p, "--app-name=kandev", title, body).Run()
		}
	}
	return nil
}

// appleString quotes s as an AppleScript string literal.
func appleString(s string) string {
	out := []byte{'"'}
	for _, r := range s {
		switch r {
		case '"', '\\':
			out = append(out, '\\', byte(r))
		default:
			out = append(out, string(r)...)
		}
	}
	return string(append(out, '"'))
}
