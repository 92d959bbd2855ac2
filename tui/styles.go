package tui

import (
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// styles is every style the UI uses, built once from a renderer. With
// color off (NO_COLOR) the styles keep only attributes (reverse, bold,
// faint), and every badge and marker is text, so the screen reads the
// same without color.
type styles struct {
	r *lipgloss.Renderer
	// reset ends any styling a cut line left open; empty when the
	// renderer writes no escape sequences at all.
	reset string

	selected   lipgloss.Style // the tree's selected row
	unfocused  lipgloss.Style // the selected row while the log has focus
	dim        lipgloss.Style
	bold       lipgloss.Style
	id         lipgloss.Style
	who        lipgloss.Style
	elapsed    lipgloss.Style
	context    lipgloss.Style // a row shown only because a descendant matches the filter
	divider    lipgloss.Style
	label      lipgloss.Style
	title      lipgloss.Style
	spinner    lipgloss.Style
	glyphDone  lipgloss.Style
	glyphFail  lipgloss.Style
	glyphTodo  lipgloss.Style
	glyphBusy  lipgloss.Style
	glyphRev   lipgloss.Style
	badgeAuto  lipgloss.Style
	badgeYou   lipgloss.Style
	badgePar   lipgloss.Style
	badgeBad   lipgloss.Style
	badgeStop  lipgloss.Style
	badgeWarn  lipgloss.Style
	errText    lipgloss.Style
	okText     lipgloss.Style
	live       lipgloss.Style
	lost       lipgloss.Style
	helpKey    lipgloss.Style
	helpDesc   lipgloss.Style
	box        lipgloss.Style
	boxTitle   lipgloss.Style
	field      lipgloss.Style
	fieldFocus lipgloss.Style
	cursor     lipgloss.Style
	logYou     lipgloss.Style
	logAgent   lipgloss.Style
	logTool    lipgloss.Style
	logQ       lipgloss.Style
	logNote    lipgloss.Style
	diffFile   lipgloss.Style // a file's header in the diff view
	diffHunk   lipgloss.Style // @@ … @@
	diffAdd    lipgloss.Style
	diffDel    lipgloss.Style
	searchHit  lipgloss.Style // the match a search of the log jumped to
}

func newStyles(r *lipgloss.Renderer, color bool) styles {
	s := styles{r: r}
	if r.ColorProfile() != termenv.Ascii {
		s.reset = "\x1b[0m"
	}
	n := r.NewStyle
	s.dim = n().Faint(true)
	s.bold = n().Bold(true)
	s.selected = n().Reverse(true)
	s.unfocused = n().Underline(true)
	s.context = n().Faint(true)
	s.divider = n().Faint(true)
	s.label = n().Faint(true)
	s.title = n().Bold(true)
	s.box = n().Border(lipgloss.RoundedBorder()).Padding(0, 1)
	s.boxTitle = n().Bold(true)
	s.field = n()
	s.fieldFocus = n().Bold(true)
	s.cursor = n().Reverse(true)
	s.errText = n().Bold(true)
	s.badgeYou = n().Bold(true)
	s.badgeBad = n().Bold(true)
	s.helpKey = n().Bold(true)
	s.diffFile = n().Bold(true)
	s.diffHunk = n().Faint(true)
	s.searchHit = n().Reverse(true)
	if !color {
		return s
	}
	c := func(hex string) lipgloss.Color { return lipgloss.Color(hex) }
	s.selected = n().Background(c("#3a3f5c")).Foreground(c("#ffffff")).Bold(true)
	s.unfocused = n().Background(c("#2a2d3e"))
	s.id = n().Foreground(c("#8a8fa8"))
	s.who = n().Foreground(c("#7aa2f7"))
	s.elapsed = n().Foreground(c("#8a8fa8"))
	s.spinner = n().Foreground(c("#e0af68"))
	s.glyphDone = n().Foreground(c("#9ece6a"))
	s.glyphFail = n().Foreground(c("#f7768e"))
	s.glyphTodo = n().Foreground(c("#8a8fa8"))
	s.glyphBusy = n().Foreground(c("#e0af68"))
	s.glyphRev = n().Foreground(c("#7dcfff"))
	s.badgeAuto = n().Foreground(c("#1a1b26")).Background(c("#bb9af7")).Bold(true)
	s.badgeYou = n().Foreground(c("#1a1b26")).Background(c("#e0af68")).Bold(true)
	s.badgePar = n().Foreground(c("#1a1b26")).Background(c("#7dcfff"))
	s.badgeBad = n().Foreground(c("#1a1b26")).Background(c("#f7768e")).Bold(true)
	s.badgeStop = n().Foreground(c("#1a1b26")).Background(c("#a9b1d6"))
	s.badgeWarn = n().Foreground(c("#1a1b26")).Background(c("#ff9e64")).Bold(true)
	s.errText = n().Foreground(c("#f7768e")).Bold(true)
	s.okText = n().Foreground(c("#9ece6a"))
	s.live = n().Foreground(c("#9ece6a"))
	s.lost = n().Foreground(c("#f7768e")).Bold(true)
	s.helpKey = n().Foreground(c("#7aa2f7")).Bold(true)
	s.helpDesc = n().Foreground(c("#a9b1d6"))
	s.box = s.box.BorderForeground(c("#7aa2f7"))
	s.boxTitle = n().Foreground(c("#7aa2f7")).Bold(true)
	s.fieldFocus = n().Foreground(c("#e0af68")).Bold(true)
	s.logYou = n().Foreground(c("#7aa2f7")).Bold(true)
	s.logAgent = n().Foreground(c("#9ece6a")).Bold(true)
	s.logTool = n().Foreground(c("#bb9af7"))
	s.logQ = n().Foreground(c("#e0af68")).Bold(true)
	s.logNote = n().Faint(true)
	s.diffFile = n().Foreground(c("#7aa2f7")).Bold(true)
	s.diffHunk = n().Foreground(c("#7dcfff"))
	s.diffAdd = n().Foreground(c("#9ece6a"))
	s.diffDel = n().Foreground(c("#f7768e"))
	return s
}
