package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// helpDialog lists every key and the rows' legend; any key closes it.
// It takes the whole body: in a box when the box fits, else without one,
// so at 80×24 the legend is not cut off below the keys.
type helpDialog struct{ base }

// fullView draws the help in w×h cells.
func (d *helpDialog) fullView(ui dialogUI, w, h int) []string {
	blank := strings.Repeat(" ", w)
	box := strings.Split(ui.st.box.Width(ui.width-2).Render(d.view(ui, ui.width-4)), "\n")
	lines := make([]string, 0, h)
	if len(box) <= h {
		bw := 0
		for _, ln := range box {
			bw = max(bw, width(ln))
		}
		pad := strings.Repeat(" ", max(0, (w-bw)/2))
		for range (h - len(box)) / 2 {
			lines = append(lines, blank)
		}
		for _, ln := range box {
			lines = append(lines, fit(pad+ln, w))
		}
	} else {
		for _, ln := range strings.Split(d.view(ui, w-2), "\n") {
			lines = append(lines, fit(" "+ln, w))
		}
		if len(lines) > h {
			lines = append(lines[:h-1], ui.st.dim.Render(fit(" … (a taller terminal shows the rest)", w)))
		}
	}
	for len(lines) < h {
		lines = append(lines, blank)
	}
	return lines
}

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
	lines = append(lines, wrap(badgeLegendText(), w)...)
	lines = append(lines, wrap("○ todo · ● in progress · ◑ back to you (its agent ran) · ◐ review · ✓ done · ✗ cancelled · spinner: an agent is running", w)...)
	return strings.Join(lines, "\n")
}

// badgeLegendText is every badge with its meaning, in badge order, then
// the assignee marker.
func badgeLegendText() string {
	parts := make([]string, 0, len(badgeText)+1)
	for k, text := range badgeText {
		parts = append(parts, text+" "+badgeLegend[k])
	}
	return strings.Join(append(parts, "@you assigned to you"), " · ")
}

func (d *helpDialog) help(k keyMap) []key.Binding {
	return []key.Binding{key.NewBinding(key.WithKeys("any"), key.WithHelp("any key", "close"))}
}
