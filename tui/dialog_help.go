package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// helpDialog lists every key; any key closes it.
type helpDialog struct{ base }

func (d *helpDialog) update(ui dialogUI, msg tea.KeyMsg) (action, tea.Cmd) {
	return closeDialog{}, nil
}

func (d *helpDialog) view(ui dialogUI, w int) string {
	st := ui.st
	cols := ui.keys.fullHelp()
	titles := []string{"move", "act on the task", "view"}
	lines := []string{st.boxTitle.Render("kandev — keys")}
	// Side by side when there is room, one after the other when not.
	colW := w / len(cols)
	if colW >= 22 {
		grid := make([][]string, 0)
		rows := 0
		for i, col := range cols {
			c := []string{st.bold.Render(fit(titles[i], colW-1))}
			for _, k := range col {
				h := k.Help()
				c = append(c, st.helpKey.Render(fit(h.Key, 6))+" "+fit(h.Desc, colW-8))
			}
			rows = max(rows, len(c))
			grid = append(grid, c)
		}
		for r := 0; r < rows; r++ {
			var b strings.Builder
			for i, c := range grid {
				cell := strings.Repeat(" ", colW-1)
				if r < len(c) {
					cell = c[r]
				}
				if i > 0 {
					b.WriteString(" ")
				}
				b.WriteString(cell)
			}
			lines = append(lines, b.String())
		}
	} else {
		for i, col := range cols {
			lines = append(lines, st.bold.Render(titles[i]))
			for _, k := range col {
				h := k.Help()
				lines = append(lines, "  "+st.helpKey.Render(fit(h.Key, 10))+" "+truncate(h.Desc, w-13))
			}
		}
	}
	lines = append(lines, "")
	lines = append(lines, wrap("AUTO autopilot · ?you waits on your answer · ?parent waits on its parent · FAILED last run failed · STOPPED halted by a stop · ESCALATED stalled, handed up · WAITING cannot start · BLOCKED waits on tasks · @you assigned to you", w)...)
	lines = append(lines, wrap("○ todo · ● in progress · ◐ review · ✓ done · ✗ cancelled · spinner: an agent is running", w)...)
	return strings.Join(lines, "\n")
}

func (d *helpDialog) help(k keyMap) []key.Binding {
	return []key.Binding{key.NewBinding(key.WithKeys("any"), key.WithHelp("any key", "close"))}
}
