package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textarea"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

const (
	ntTitle = iota
	ntPrompt
	ntDesc
	ntProfile
	ntAuto
	ntParent
	ntStart
	ntWorkspace // last, so the fields above keep their tab order
	ntFields
)

// promptRows is the most lines the new-task prompt shows at once; it
// grows to them as it is written (more scroll).
const promptRows = 4

// newTaskDialog creates a task, as a child of the selected one or a root.
type newTaskDialog struct {
	base
	title, desc textinput.Model
	// prompt is the first message: several lines, as a message is (the
	// newline binding breaks them; enter creates the task).
	prompt   textarea.Model
	maxRows  int // the prompt's height the screen leaves room for
	profiles []core.Profile
	// profile indexes profiles; -1 is the default: no profile is sent and
	// the daemon picks (KANDEV_PROFILE, config.toml, the first usable
	// built-in agent, else mock; ADR 0023), as `kandev task create` does.
	profile     int
	wantProfile string // chosen before the profiles arrived; "" the default
	autopilot   bool
	parentID    string // the selected task when the dialog opened
	parentTitle string
	withParent  bool
	start       bool
	focus       int
	cwd         string // where the UI was started: a root task's directory
	// otherWorkspace picks the second workspace choice: for a child, a new
	// worktree instead of its parent's; for a root task, its directory as
	// it is instead of a worktree. Off is the CLI's default (ADR 0027).
	otherWorkspace bool
}

// newNewTaskDialog opens the dialog with sel (the selected task, or nil)
// offered as the parent; cwd is where the UI was started.
func newNewTaskDialog(ui dialogUI, id int, sel *core.Task, profiles []core.Profile, cwd string) *newTaskDialog {
	d := &newTaskDialog{base: base{id: id}, start: true, profile: -1, cwd: cwd}
	d.title = newInput(ui.st, "what the task is", 0)
	d.prompt = newTextArea(ui.st, "first message to the agent (optional)", ui.keys.Newline)
	d.desc = newInput(ui.st, "optional", 0)
	d.resize(ui)
	d.title.Focus()
	if t := sel; t != nil {
		d.parentID, d.parentTitle, d.withParent = t.ID, oneLine(t.Title), true
		d.wantProfile = t.Profile
	}
	d.setProfiles(profiles)
	return d
}

// setProfiles takes a fresh profile list, keeping the chosen name.
func (d *newTaskDialog) setProfiles(ps []core.Profile) {
	cur := d.wantProfile
	if d.profile >= 0 && d.profile < len(d.profiles) {
		cur = d.profiles[d.profile].Name
	}
	d.profiles, d.profile = ps, -1
	for i, p := range ps {
		if p.Name == cur {
			d.profile = i
		}
	}
}

// resize fits the inputs to the dialog's width, and the prompt to the
// rows the screen leaves (the dialog's other lines take about twenty).
func (d *newTaskDialog) resize(ui dialogUI) {
	iw := ui.width - 21
	d.title.Width, d.desc.Width = iw, iw
	d.prompt.SetWidth(iw + 1)
	d.maxRows = clamp(ui.height-20, 1, promptRows)
	d.fitPrompt()
}

// fitPrompt gives the prompt as many rows as its text takes, wrapped, up
// to maxRows.
func (d *newTaskDialog) fitPrompt() {
	w, rows := max(1, d.prompt.Width()), 0
	for _, ln := range strings.Split(d.prompt.Value(), "\n") {
		rows += width(ln)/w + 1
	}
	d.prompt.SetHeight(clamp(rows, 1, d.maxRows))
}

func (d *newTaskDialog) setFocus(i int) {
	d.focus = (i + ntFields) % ntFields
	d.title.Blur()
	d.prompt.Blur()
	d.desc.Blur()
	switch d.focus {
	case ntTitle:
		d.title.Focus()
	case ntPrompt:
		d.prompt.Focus()
	case ntDesc:
		d.desc.Focus()
	}
}

// withinPrompt says whether a key belongs to the prompt's text rather
// than to the dialog: everything but tab, and ↑↓ only between its lines
// (from its first or last line they move to the next field).
func (d *newTaskDialog) withinPrompt(msg tea.KeyMsg) bool {
	switch msg.Type {
	case tea.KeyTab, tea.KeyShiftTab:
		return false
	case tea.KeyUp:
		return d.prompt.Line() > 0
	case tea.KeyDown:
		return d.prompt.Line() < d.prompt.LineCount()-1
	}
	return true
}

// input is the task the dialog would create now.
func (d *newTaskDialog) input() api.CreateTaskInput {
	in := api.CreateTaskInput{
		Title:       strings.TrimSpace(d.title.Value()),
		Prompt:      strings.TrimSpace(d.prompt.Value()),
		Description: strings.TrimSpace(d.desc.Value()),
		Autopilot:   d.autopilot,
		Start:       d.start,
	}
	if d.profile >= 0 && d.profile < len(d.profiles) {
		in.Profile = d.profiles[d.profile].Name
	}
	if d.withParent {
		// As `kandev task create --parent` without --cwd: the child works
		// where its parent works, in its worktree if it has one (inherit),
		// or in a new worktree branched from the parent's branch (new).
		in.ParentID = d.parentID
		if d.otherWorkspace {
			in.Workspace = "new"
		}
		return in
	}
	in.CWD = d.cwd
	if d.otherWorkspace {
		in.Workspace = core.WorkspaceShared
	}
	return in
}

// workspaceText says where the task will work.
func (d *newTaskDialog) workspaceText() (choice, detail string) {
	switch {
	case d.withParent && !d.otherWorkspace:
		return "inherit", "its parent's worktree or directory"
	case d.withParent:
		return "new", "a worktree of its own from its parent's branch"
	case !d.otherWorkspace:
		return "worktree", "its own in a git repository, else the directory"
	}
	return "shared", "the directory as it is"
}

func (d *newTaskDialog) update(ui dialogUI, msg tea.KeyMsg) (action, tea.Cmd) {
	if d.busy {
		return nil, nil
	}
	k := ui.keys
	switch {
	case key.Matches(msg, k.Cancel):
		return closeDialog{}, nil
	case key.Matches(msg, k.Submit):
		d.busy, d.err = true, ""
		return createTask{in: d.input()}, nil
	case d.focus == ntPrompt && d.withinPrompt(msg):
		// The box is at its tallest while the key lands, so the textarea
		// scrolls only past promptRows lines; fitPrompt then shrinks it
		// to the text. Grown after, a new second line showed alone, the
		// first scrolled out of a box of one row.
		d.prompt.SetHeight(d.maxRows)
		var cmd tea.Cmd
		d.prompt, cmd = d.prompt.Update(msg)
		d.fitPrompt()
		return nil, cmd
	case msg.Type == tea.KeyTab || msg.Type == tea.KeyDown:
		d.setFocus(d.focus + 1)
		return nil, nil
	case msg.Type == tea.KeyShiftTab || msg.Type == tea.KeyUp:
		d.setFocus(d.focus - 1)
		return nil, nil
	}
	var cmd tea.Cmd
	switch d.focus {
	case ntTitle:
		d.title, cmd = d.title.Update(msg)
		return nil, cmd
	case ntDesc:
		d.desc, cmd = d.desc.Update(msg)
		return nil, cmd
	}
	toggle := key.Matches(msg, k.Toggle)
	switch d.focus {
	case ntProfile:
		// The choices are the default, then each profile.
		n, i := len(d.profiles)+1, d.profile+1
		switch {
		case key.Matches(msg, k.Left):
			i = (i + n - 1) % n
		case key.Matches(msg, k.Right), toggle:
			i = (i + 1) % n
		}
		d.profile = i - 1
	case ntAuto:
		if toggle || key.Matches(msg, k.Left, k.Right) {
			d.autopilot = !d.autopilot
		}
	case ntParent:
		if d.parentID != "" && (toggle || key.Matches(msg, k.Left, k.Right)) {
			// The workspace choices differ for a child and a root task:
			// back to the default.
			d.withParent, d.otherWorkspace = !d.withParent, false
		}
	case ntStart:
		if toggle || key.Matches(msg, k.Left, k.Right) {
			d.start = !d.start
		}
	case ntWorkspace:
		if toggle || key.Matches(msg, k.Left, k.Right) {
			d.otherWorkspace = !d.otherWorkspace
		}
	}
	return nil, nil
}

func (d *newTaskDialog) view(ui dialogUI, w int) string {
	st := ui.st
	row := func(i int, label, value string) string {
		mark, ls := "  ", st.label
		if d.focus == i {
			mark, ls = "> ", st.fieldFocus
		}
		return mark + ls.Render(fit(label, 12)) + " " + truncate(value, max(1, w-15))
	}
	prof := "‹ default ›" + st.dim.Render("  the configured default (kandev config get profile)")
	if d.profile >= 0 && d.profile < len(d.profiles) {
		p := d.profiles[d.profile]
		prof = "‹ " + p.Name + " ›"
		if !p.MCP {
			prof += st.dim.Render("  no MCP server: cannot run autopilot")
		}
	}
	ws, wsDetail := d.workspaceText()
	parent := "none (a root task)"
	if d.withParent {
		parent = d.parentID + " " + d.parentTitle
	}
	lines := []string{
		st.boxTitle.Render("New task"),
		"",
		row(ntTitle, "title", d.title.View()),
	}
	for i, ln := range strings.Split(d.prompt.View(), "\n") {
		if i == 0 {
			lines = append(lines, row(ntPrompt, "prompt", ln))
		} else {
			lines = append(lines, strings.Repeat(" ", 15)+truncate(ln, max(1, w-15)))
		}
	}
	lines = append(lines,
		row(ntDesc, "description", d.desc.View()),
		row(ntProfile, "profile", prof),
		row(ntAuto, "autopilot", checkbox(d.autopilot)+" fixed at creation"),
		row(ntParent, "parent", parent),
		row(ntStart, "start now", checkbox(d.start)),
		row(ntWorkspace, "workspace", "‹ "+ws+" › "+st.dim.Render(wsDetail)),
		"",
		st.dim.Render(truncate("tab/↑↓ field · ←→ change · ctrl+j new line · enter create · esc cancel", w)),
	)
	if f := d.footer(st, w); f != "" {
		lines = append(lines, "", f)
	}
	return strings.Join(lines, "\n")
}

func (d *newTaskDialog) help(k keyMap) []key.Binding {
	return []key.Binding{k.Submit, k.NextField, k.Toggle, k.Cancel, k.Newline}
}
