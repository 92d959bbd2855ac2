package tui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textarea"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// handChoice is one name the hand-on dialog offers: back, a role or a
// person.
type handChoice struct {
	name   string // what HandoffInput.To gets
	detail string // what it is, dim after the name
}

const (
	hoTo = iota
	hoMessage
	hoFields
)

// handoffDialog hands the selected task on: to back (whoever handed it to
// its assignee), a role or a person, chosen from a list the typed text
// filters (a name the list lacks is sent as typed, for the engine to
// judge), with an optional message of several lines.
type handoffDialog struct {
	base
	taskID    string
	title     string
	assignee  *core.Ref
	handedBy  *core.Ref
	autopilot bool

	filter textinput.Model
	input  textarea.Model
	focus  int

	choices []handChoice
	shown   []int // indexes into choices that match the filter
	sel     int   // index into shown
	top     int   // the first shown choice in the list's window
	rows    int   // the list's window
	// picked: the operator moved the selection, so a late list keeps it.
	picked  bool
	loading bool
	loadErr string

	profiles []core.Profile // to mark roles that cannot run autopilot
}

// hoLabel is the width of the field labels' column.
const hoLabel = 11

// newHandoffDialog opens the dialog for t; profiles mark the roles that
// cannot run an autopilot task. The roles and people arrive later (loaded).
func newHandoffDialog(ui dialogUI, id int, t *core.Task, profiles []core.Profile) *handoffDialog {
	d := &handoffDialog{base: base{id: id}, taskID: t.ID, title: oneLine(t.Title), autopilot: t.Autopilot, loading: true,
		profiles: profiles}
	if t.Assignee != nil {
		a := *t.Assignee
		d.assignee = &a
	}
	if t.HandedBy != nil {
		a := *t.HandedBy
		d.handedBy = &a
	}
	d.filter = newInput(ui.st, "type to filter, or any name", 20)
	d.input = newTextArea(ui.st, "message (optional)", ui.keys.Newline)
	d.resize(ui)
	d.setChoices(nil, nil)
	d.setFocus(hoTo)
	return d
}

// resize fits the fields to the dialog and the list and the message box
// to the screen's height.
func (d *handoffDialog) resize(ui dialogUI) {
	w := ui.width - 4 - hoLabel
	d.filter.Width = max(1, w-1)
	d.input.SetWidth(w)
	d.input.SetHeight(clamp(ui.height-21, 1, messageRows))
	d.rows = clamp(ui.height-19, 2, 8)
	d.scroll()
}

func (d *handoffDialog) setFocus(i int) {
	d.focus = (i + hoFields) % hoFields
	if d.focus == hoTo {
		d.filter.Focus()
		d.input.Blur()
	} else {
		d.filter.Blur()
		d.input.Focus()
	}
}

// setChoices builds the list: back first, then the roles, the people, and
// the profiles' own roles not listed yet.
func (d *handoffDialog) setChoices(roles []api.Role, persons []api.Person) {
	keep := ""
	if d.picked {
		keep = d.selected()
	}
	back := "nobody handed it over: the engine refuses back"
	if b := d.handedBy; b != nil {
		back = "→ " + describeAssignee(*b) + ", who handed it over"
		if b.IsTask() {
			back = "→ " + describeAssignee(*b) + ": its agent signs it off"
		}
	}
	d.choices = []handChoice{{name: "back", detail: back}}
	mcp := map[string]bool{}
	for _, p := range d.profiles {
		mcp[p.Name] = p.MCP
	}
	seen := map[string]bool{}
	role := func(name, detail, profile string) {
		seen[name] = true
		if ok, known := mcp[profile]; d.autopilot && known && !ok {
			detail += " · no MCP: not for autopilot"
		}
		d.choices = append(d.choices, handChoice{name: name, detail: d.holds(core.RoleRef(name), detail)})
	}
	for _, r := range roles {
		detail := "role · profile " + r.Profile
		if r.Implicit {
			detail = "role · profile's own"
		}
		if r.ReportsTo != nil {
			detail += " · reports to " + describeAssignee(*r.ReportsTo)
		}
		role(r.Name, detail, r.Profile)
	}
	for _, p := range persons {
		detail := "person"
		if p.Name == core.Operator {
			detail = "person · you"
		}
		d.choices = append(d.choices, handChoice{name: p.Name, detail: d.holds(core.PersonRef(p.Name), detail)})
	}
	// A profile's own role exists as soon as it is named.
	if !d.loading {
		for _, p := range d.profiles {
			if !seen[p.Name] {
				role(p.Name, "role · profile's own", p.Name)
			}
		}
	}
	if keep == "" && d.handedBy == nil && len(d.choices) > 1 {
		keep = d.choices[1].name // back would be refused
		if d.assignee != nil && keep == d.assignee.Name && len(d.choices) > 2 {
			keep = d.choices[2].name
		}
	}
	d.refilter(keep)
}

// holds marks the choice that has the task now (the engine refuses to
// hand it to them again).
func (d *handoffDialog) holds(r core.Ref, detail string) string {
	if a := d.assignee; a != nil && *a == r {
		return detail + " · has it now"
	}
	return detail
}

// refilter applies the typed text, keeping the selection on keep (a
// name) when it is still shown.
func (d *handoffDialog) refilter(keep string) {
	q := strings.ToLower(strings.TrimSpace(d.filter.Value()))
	d.shown, d.sel = d.shown[:0], 0
	for i, c := range d.choices {
		if q == "" || strings.Contains(strings.ToLower(c.name), q) {
			if c.name == keep {
				d.sel = len(d.shown)
			}
			d.shown = append(d.shown, i)
		}
	}
	d.scroll()
}

func (d *handoffDialog) scroll() {
	if d.sel < d.top {
		d.top = d.sel
	}
	if d.sel >= d.top+d.rows {
		d.top = d.sel - d.rows + 1
	}
	d.top = clamp(d.top, 0, max(0, len(d.shown)-d.rows))
}

// selected is the chosen name, or "" when the filter shows none.
func (d *handoffDialog) selected() string {
	if d.sel < len(d.shown) {
		return d.choices[d.shown[d.sel]].name
	}
	return ""
}

// target is what the engine gets: the chosen name, else the typed text.
func (d *handoffDialog) target() string {
	if s := d.selected(); s != "" {
		return s
	}
	return strings.TrimSpace(d.filter.Value())
}

func (d *handoffDialog) loaded(msg assigneesMsg) {
	d.loading = false
	if msg.err != nil {
		d.loadErr = msg.what + ": " + errorText(msg.err)
	}
	d.setChoices(msg.roles, msg.persons)
}

func (d *handoffDialog) update(ui dialogUI, msg tea.KeyMsg) (action, tea.Cmd) {
	if d.busy {
		return nil, nil
	}
	switch {
	case key.Matches(msg, ui.keys.Cancel):
		return closeDialog{}, nil
	case msg.Type == tea.KeyTab || msg.Type == tea.KeyShiftTab:
		d.setFocus(d.focus + 1)
		return nil, nil
	case d.focus == hoTo && msg.Type == tea.KeyEnter && !msg.Alt:
		d.setFocus(hoMessage)
		return nil, nil
	case d.focus == hoMessage && key.Matches(msg, ui.keys.Submit):
		in := api.HandoffInput{To: d.target(), Message: strings.TrimSpace(d.input.Value())}
		d.busy, d.err = true, ""
		return handOnTask{taskID: d.taskID, in: in}, nil
	case d.focus == hoTo && (msg.Type == tea.KeyUp || msg.Type == tea.KeyDown):
		if n := len(d.shown); n > 0 {
			step := 1
			if msg.Type == tea.KeyUp {
				step = n - 1
			}
			d.sel = (d.sel + step) % n
			d.picked = true
			d.scroll()
		}
		return nil, nil
	}
	var cmd tea.Cmd
	if d.focus == hoTo {
		before := d.filter.Value()
		d.filter, cmd = d.filter.Update(msg)
		if d.filter.Value() != before {
			d.refilter(d.selected())
		}
		return nil, cmd
	}
	d.input, cmd = d.input.Update(msg)
	return nil, cmd
}

func (d *handoffDialog) view(ui dialogUI, w int) string {
	st := ui.st
	lines := []string{st.boxTitle.Render(truncate("Hand on task "+d.taskID+" · "+d.title, w))}
	now := "with nobody"
	if a := d.assignee; a != nil {
		now = "with " + describeAssignee(*a)
	}
	by := "nobody handed it over"
	if b := d.handedBy; b != nil {
		by = "handed over by " + describeAssignee(*b)
	}
	lines = append(lines, st.dim.Render(truncate("now "+now+" · "+by, w)), "")
	label := func(i int, name string) string {
		if d.focus == i {
			return "> " + st.fieldFocus.Render(fit(name, hoLabel-3)) + " "
		}
		return "  " + st.label.Render(fit(name, hoLabel-3)) + " "
	}
	pad := strings.Repeat(" ", hoLabel)
	to := d.filter.View()
	if d.focus != hoTo {
		to = truncate(d.target(), w-hoLabel) // what enter sends
	}
	lines = append(lines, label(hoTo, "to")+to)
	listW := w - hoLabel - 2
	nameW := 4
	for _, c := range d.choices {
		nameW = max(nameW, width(c.name))
	}
	nameW = min(nameW, max(4, listW/3))
	var list []string
	switch {
	case d.loading:
		list = append(list, st.dim.Render("loading roles and people…"))
	case d.loadErr != "":
		list = append(list, st.errText.Render(truncate("✗ "+d.loadErr, listW)))
	}
	for i := d.top; i < len(d.shown) && i < d.top+d.rows; i++ {
		c := d.choices[d.shown[i]]
		mark := "  "
		if i == d.sel {
			mark = "> "
			if d.focus == hoTo {
				mark = st.fieldFocus.Render(mark)
			}
		}
		text := fit(c.name, nameW) + " " + st.dim.Render(c.detail)
		list = append(list, mark+truncate(text, listW))
	}
	if len(d.shown) == 0 && !d.loading {
		typed := strings.TrimSpace(d.filter.Value())
		hint := "no names to choose from: type one"
		if typed != "" {
			hint = "none listed matches: the engine is asked for " + strconv.Quote(typed)
		}
		list = append(list, st.dim.Render(truncate(hint, listW)))
	}
	if extra := len(d.shown) - d.rows; extra > 0 {
		list = append(list, st.dim.Render(truncate(fmt.Sprintf("  %d of %d shown (↑↓ scroll, type to filter)", d.rows, len(d.shown)), listW)))
	}
	// The list keeps its height while the filter narrows it.
	for len(list) < min(d.rows, len(d.choices)) {
		list = append(list, "")
	}
	for _, l := range list {
		lines = append(lines, pad+l)
	}
	lines = append(lines, "")
	for i, row := range strings.Split(d.input.View(), "\n") {
		head := pad
		if i == 0 {
			head = label(hoMessage, "message")
		}
		lines = append(lines, truncate(head+row, w))
	}
	lines = append(lines, "")
	hint := "type to filter · ↑↓ choose · enter/tab to the message · esc cancel"
	if d.focus == hoMessage {
		hint = "enter hand on · " + ui.keys.Newline.Help().Key + " new line · tab the name · esc cancel"
	}
	for _, l := range wrap(hint, w) {
		lines = append(lines, st.dim.Render(l))
	}
	if f := d.footer(st, w); f != "" {
		lines = append(lines, "", f)
	}
	return strings.Join(lines, "\n")
}

func (d *handoffDialog) help(k keyMap) []key.Binding {
	if d.focus == hoTo {
		return []key.Binding{k.ToMessage, k.Choose, k.Cancel}
	}
	return []key.Binding{k.SendHandOn, k.Newline, k.NextField, k.Cancel}
}
