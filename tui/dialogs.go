package tui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textarea"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
)

// dialog is a modal box over the screen: new task, answer, message,
// confirmations and help. Each is a plain struct; the model routes keys to
// the open one and draws it.
type dialog interface {
	// update handles a key; it closes the dialog by setting m.dialog.
	update(m *Model, msg tea.KeyMsg) tea.Cmd
	// view renders the box's content for w cells.
	view(m *Model, w int) string
	// help is the dialog's help bar.
	help(k keyMap) []key.Binding
	// id tells an action's outcome which dialog asked for it.
	dialogID() int
	// failed shows the engine's refusal inside the dialog.
	failed(err error)
}

// base holds what every dialog has: an id, a busy flag while its request
// is in flight, and the last refusal.
type base struct {
	id   int
	busy bool
	err  string
}

func (b *base) dialogID() int { return b.id }
func (b *base) failed(err error) {
	b.busy = false
	b.err = errorText(err)
}

// errorText is an engine refusal as the operator reads it: its message,
// and its code when the message alone is ambiguous.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	e := core.AsError(err)
	msg := oneLine(e.Message)
	switch e.Code {
	case core.CodeUnavailable, core.CodeInternal:
		return string(e.Code) + ": " + msg
	}
	return msg
}

func (b *base) footer(m *Model, w int) string {
	switch {
	case b.busy:
		return m.st.dim.Render("working…")
	case b.err != "":
		return wrapStyled(m.st.errText.Render("✗ refused: ")+b.err, w)
	}
	return ""
}

// wrapStyled wraps a line that may carry styling in its first words.
func wrapStyled(s string, w int) string {
	return strings.Join(wrap(s, w), "\n")
}

func newInput(m *Model, placeholder string, w int) textinput.Model {
	ti := textinput.New()
	ti.Prompt = ""
	ti.Placeholder = placeholder
	ti.Width = w
	ti.Cursor.SetMode(cursor.CursorStatic)
	ti.Cursor.Style = m.st.cursor
	ti.PlaceholderStyle = m.st.dim
	return ti
}

// checkbox renders a toggle that reads without color.
func checkbox(on bool) string {
	if on {
		return "[x]"
	}
	return "[ ]"
}

// ---- confirmation (stop, archive) ----

type confirmDialog struct {
	base
	op     opKind
	taskID string
	title  string
	body   []string
}

func (d *confirmDialog) update(m *Model, msg tea.KeyMsg) tea.Cmd {
	if d.busy {
		return nil
	}
	switch {
	case key.Matches(msg, m.keys.Yes), d.err == "" && key.Matches(msg, m.keys.Submit):
		d.busy, d.err = true, ""
		m.setStatus("", false)
		switch d.op {
		case opStop:
			return stopCmd(m.ctx, m.client, d.id, d.taskID)
		case opArchive:
			return archiveCmd(m.ctx, m.client, d.id, d.taskID)
		}
	case key.Matches(msg, m.keys.No):
		m.dialog = nil
	}
	return nil
}

func (d *confirmDialog) view(m *Model, w int) string {
	lines := []string{m.st.boxTitle.Render(d.title)}
	for _, b := range d.body {
		lines = append(lines, wrap(b, w)...)
	}
	lines = append(lines, "", m.st.helpKey.Render("y")+" "+d.op.String()+"   "+m.st.helpKey.Render("n/esc")+" cancel")
	if f := d.footer(m, w); f != "" {
		lines = append(lines, "", f)
	}
	return strings.Join(lines, "\n")
}

func (d *confirmDialog) help(k keyMap) []key.Binding { return []key.Binding{k.Yes, k.No} }

// ---- help ----

type helpDialog struct{ base }

func (d *helpDialog) update(m *Model, msg tea.KeyMsg) tea.Cmd {
	m.dialog = nil
	return nil
}

func (d *helpDialog) view(m *Model, w int) string {
	st := m.st
	cols := m.keys.fullHelp()
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

// ---- new task ----

const (
	ntTitle = iota
	ntPrompt
	ntDesc
	ntProfile
	ntAuto
	ntParent
	ntStart
	ntFields
)

type newTaskDialog struct {
	base
	inputs      [3]textinput.Model // title, prompt, description
	profiles    []core.Profile
	profile     int
	wantProfile string // chosen before the profiles arrived
	autopilot   bool
	parentID    string // the selected task when the dialog opened
	parentTitle string
	withParent  bool
	start       bool
	focus       int
}

func newNewTaskDialog(m *Model, id int) *newTaskDialog {
	d := &newTaskDialog{base: base{id: id}, start: true, wantProfile: core.DefaultProfile}
	iw := m.dialogWidth() - 21
	d.inputs[0] = newInput(m, "what the task is", iw)
	d.inputs[1] = newInput(m, "first message to the agent (optional)", iw)
	d.inputs[2] = newInput(m, "optional", iw)
	d.inputs[0].Focus()
	if t := m.selectedTask(); t != nil {
		d.parentID, d.parentTitle, d.withParent = t.ID, oneLine(t.Title), true
		d.wantProfile = t.Profile
	}
	d.setProfiles(m.profiles)
	return d
}

// setProfiles takes a fresh profile list, keeping the chosen name.
func (d *newTaskDialog) setProfiles(ps []core.Profile) {
	cur := ""
	if d.profile < len(d.profiles) {
		cur = d.profiles[d.profile].Name
	}
	if cur == "" {
		cur = d.wantProfile
	}
	d.profiles, d.profile = ps, 0
	for i, p := range ps {
		if p.Name == cur {
			d.profile = i
		}
	}
}

func (d *newTaskDialog) setFocus(i int) {
	d.focus = (i + ntFields) % ntFields
	for j := range d.inputs {
		if j == d.focus {
			d.inputs[j].Focus()
		} else {
			d.inputs[j].Blur()
		}
	}
}

func (d *newTaskDialog) update(m *Model, msg tea.KeyMsg) tea.Cmd {
	if d.busy {
		return nil
	}
	k := m.keys
	switch {
	case key.Matches(msg, k.Cancel):
		m.dialog = nil
		return nil
	case key.Matches(msg, k.Submit):
		in := core.CreateTaskInput{
			Title:       strings.TrimSpace(d.inputs[0].Value()),
			Prompt:      strings.TrimSpace(d.inputs[1].Value()),
			Description: strings.TrimSpace(d.inputs[2].Value()),
			Autopilot:   d.autopilot,
			Start:       d.start,
			CWD:         m.opts.CWD,
		}
		if d.profile < len(d.profiles) {
			in.Profile = d.profiles[d.profile].Name
		}
		if d.withParent {
			in.ParentID = d.parentID
		}
		d.busy, d.err = true, ""
		return createCmd(m.ctx, m.client, d.id, in)
	case msg.Type == tea.KeyTab || msg.Type == tea.KeyDown:
		d.setFocus(d.focus + 1)
		return nil
	case msg.Type == tea.KeyShiftTab || msg.Type == tea.KeyUp:
		d.setFocus(d.focus - 1)
		return nil
	}
	if d.focus < len(d.inputs) {
		var cmd tea.Cmd
		d.inputs[d.focus], cmd = d.inputs[d.focus].Update(msg)
		return cmd
	}
	toggle := key.Matches(msg, k.Toggle)
	switch d.focus {
	case ntProfile:
		if n := len(d.profiles); n > 0 {
			switch {
			case key.Matches(msg, k.Left):
				d.profile = (d.profile + n - 1) % n
			case key.Matches(msg, k.Right), toggle:
				d.profile = (d.profile + 1) % n
			}
		}
	case ntAuto:
		if toggle || key.Matches(msg, k.Left, k.Right) {
			d.autopilot = !d.autopilot
		}
	case ntParent:
		if d.parentID != "" && (toggle || key.Matches(msg, k.Left, k.Right)) {
			d.withParent = !d.withParent
		}
	case ntStart:
		if toggle || key.Matches(msg, k.Left, k.Right) {
			d.start = !d.start
		}
	}
	return nil
}

func (d *newTaskDialog) view(m *Model, w int) string {
	st := m.st
	row := func(i int, label, value string) string {
		mark, ls := "  ", st.label
		if d.focus == i {
			mark, ls = "> ", st.fieldFocus
		}
		return mark + ls.Render(fit(label, 12)) + " " + truncate(value, max(1, w-15))
	}
	prof := "(none)"
	if d.profile < len(d.profiles) {
		p := d.profiles[d.profile]
		prof = "‹ " + p.Name + " ›"
		if !p.MCP {
			prof += st.dim.Render("  no MCP server: cannot run autopilot")
		}
	}
	parent := "none (a root task)"
	if d.withParent {
		parent = d.parentID + " " + d.parentTitle
	}
	lines := []string{
		st.boxTitle.Render("New task"),
		"",
		row(ntTitle, "title", d.inputs[0].View()),
		row(ntPrompt, "prompt", d.inputs[1].View()),
		row(ntDesc, "description", d.inputs[2].View()),
		row(ntProfile, "profile", prof),
		row(ntAuto, "autopilot", checkbox(d.autopilot)+" fixed at creation"),
		row(ntParent, "parent", parent),
		row(ntStart, "start now", checkbox(d.start)),
		"",
		st.dim.Render(truncate("tab/↑↓ move · space/←→ change · enter create · esc cancel", w)),
	}
	if f := d.footer(m, w); f != "" {
		lines = append(lines, "", f)
	}
	return strings.Join(lines, "\n")
}

func (d *newTaskDialog) help(k keyMap) []key.Binding {
	return []key.Binding{k.Submit, k.NextField, k.Toggle, k.Cancel}
}

// ---- answer a user question ----

// answerPart is one prompt of a (possibly multi-part) question: a choice
// among its options, or free text. choice == len(options) means "other".
type answerPart struct {
	item   core.QuestionItem
	choice int
	input  textinput.Model
}

func (p *answerPart) typing() bool { return p.choice >= len(p.item.Options) }

type answerDialog struct {
	base
	taskID string
	q      core.QuestionInfo
	parts  []answerPart
	cur    int
}

func newAnswerDialog(m *Model, id int, t *core.Task) *answerDialog {
	q := *t.PendingQuestion
	d := &answerDialog{base: base{id: id}, taskID: t.ID, q: q}
	items := q.Questions
	if len(items) == 0 {
		items = []core.QuestionItem{{Prompt: q.Text}}
	}
	for _, it := range items {
		p := answerPart{item: it, input: newInput(m, "type an answer", m.dialogWidth()-20)}
		d.parts = append(d.parts, p)
	}
	d.focusPart(0)
	return d
}

func (d *answerDialog) focusPart(i int) {
	d.cur = clamp(i, 0, len(d.parts)-1)
	for j := range d.parts {
		p := &d.parts[j]
		if j == d.cur && p.typing() {
			p.input.Focus()
		} else {
			p.input.Blur()
		}
	}
}

// answers is what goes to the engine: per part, the option's number or
// the typed text.
func (d *answerDialog) answers() []string {
	out := make([]string, len(d.parts))
	for i, p := range d.parts {
		if p.typing() {
			out[i] = strings.TrimSpace(p.input.Value())
		} else {
			out[i] = strconv.Itoa(p.choice + 1)
		}
	}
	return out
}

func (d *answerDialog) update(m *Model, msg tea.KeyMsg) tea.Cmd {
	if d.busy {
		return nil
	}
	k := m.keys
	p := &d.parts[d.cur]
	nOpt := len(p.item.Options)
	switch {
	case key.Matches(msg, k.Cancel):
		m.dialog = nil
		return nil
	case msg.Type == tea.KeyTab:
		d.focusPart(d.cur + 1)
		return nil
	case msg.Type == tea.KeyShiftTab:
		d.focusPart(d.cur - 1)
		return nil
	case key.Matches(msg, k.Submit):
		if d.cur < len(d.parts)-1 {
			d.focusPart(d.cur + 1)
			return nil
		}
		d.busy, d.err = true, ""
		return answerCmd(m.ctx, m.client, d.id, d.taskID, core.AnswerInput{QuestionID: d.q.ID, Answers: d.answers()})
	case nOpt > 0 && msg.Type == tea.KeyUp:
		p.choice = (p.choice + nOpt) % (nOpt + 1)
		d.focusPart(d.cur)
		return nil
	case nOpt > 0 && msg.Type == tea.KeyDown:
		p.choice = (p.choice + 1) % (nOpt + 1)
		d.focusPart(d.cur)
		return nil
	case nOpt > 0 && !p.typing() && msg.Type == tea.KeyRunes && len(msg.Runes) == 1:
		if n := int(msg.Runes[0] - '0'); n >= 1 && n <= nOpt {
			p.choice = n - 1
			return nil
		}
		if msg.Runes[0] == 'j' {
			p.choice = (p.choice + 1) % (nOpt + 1)
			d.focusPart(d.cur)
		} else if msg.Runes[0] == 'k' {
			p.choice = (p.choice + nOpt) % (nOpt + 1)
			d.focusPart(d.cur)
		}
		return nil
	}
	if p.typing() {
		var cmd tea.Cmd
		p.input, cmd = p.input.Update(msg)
		return cmd
	}
	return nil
}

func (d *answerDialog) view(m *Model, w int) string {
	st := m.st
	lines := []string{st.boxTitle.Render(truncate(fmt.Sprintf("Answer task %s · question %s", d.taskID, d.q.ID), w)), ""}
	for i, p := range d.parts {
		head := oneLine(p.item.Prompt)
		if len(d.parts) > 1 {
			mark := "  "
			if i == d.cur {
				mark = "» "
			}
			head = fmt.Sprintf("%s%d/%d  %s", mark, i+1, len(d.parts), head)
		}
		hs := st.bold
		if i == d.cur {
			hs = st.fieldFocus
		}
		for j, l := range wrap(head, w) {
			if j == 0 {
				l = hs.Render(l)
			}
			lines = append(lines, l)
		}
		for j, o := range p.item.Options {
			mark := "  "
			if j == p.choice {
				mark = "> "
				if i == d.cur {
					mark = st.fieldFocus.Render("> ")
				}
			}
			text := fmt.Sprintf("%d) %s", j+1, oneLine(o.Label))
			if o.Description != "" {
				text += st.dim.Render(" — " + oneLine(o.Description))
			}
			lines = append(lines, "  "+mark+truncate(text, w-4))
		}
		if len(p.item.Options) > 0 {
			mark := "  "
			if p.typing() {
				mark = "> "
			}
			other := "other: "
			if p.typing() {
				other += p.input.View()
			} else {
				other += st.dim.Render("(type your own answer)")
			}
			lines = append(lines, "  "+mark+truncate(other, w-4))
		} else {
			lines = append(lines, "  > "+p.input.View())
		}
		lines = append(lines, "")
	}
	hint := "↑↓/1-9 choose · enter answer · esc cancel"
	if len(d.parts) > 1 {
		hint = "↑↓/1-9 choose · tab next part · enter next/answer · esc cancel"
	}
	lines = append(lines, st.dim.Render(truncate(hint, w)))
	if f := d.footer(m, w); f != "" {
		lines = append(lines, "", f)
	}
	return strings.Join(lines, "\n")
}

func (d *answerDialog) help(k keyMap) []key.Binding {
	return []key.Binding{k.Submit, k.NextField, k.Cancel}
}

// ---- message a task ----

type messageDialog struct {
	base
	taskID    string
	title     string
	input     textarea.Model
	interrupt bool
	// canInterrupt: the operator may interrupt this task (mayInterrupt).
	canInterrupt bool
	running      bool
}

// mayInterrupt mirrors the engine's rule for who may interrupt a task: a
// person (the operator) always; an agent only its direct children. The
// TUI acts as the operator, so the toggle is always offered; the rule is
// kept here so the toggle follows it if the TUI ever acts as someone else.
func mayInterrupt(actor core.Actor, t *core.Task) bool {
	switch actor.Kind {
	case core.ActorPerson:
		return true
	case core.ActorAgent:
		return core.IsDirectParent(actor.TaskID, *t)
	}
	return false
}

func newMessageDialog(m *Model, id int, t *core.Task) *messageDialog {
	d := &messageDialog{base: base{id: id}, taskID: t.ID, title: oneLine(t.Title),
		canInterrupt: mayInterrupt(core.OperatorActor(), t), running: isRunning(t)}
	d.input = newTextArea(m, "message to the agent", m.keys.Newline)
	d.resize(m)
	d.input.Focus()
	return d
}

// resize fits the text box to the dialog: the dialog's width, and as many
// lines as the screen leaves room for (up to messageRows; more scroll).
func (d *messageDialog) resize(m *Model) {
	d.input.SetWidth(m.dialogWidth() - 6)
	d.input.SetHeight(clamp(m.h-19, 1, messageRows))
}

// messageRows is the most lines the message box shows at once.
const messageRows = 5

// newTextArea is a multi-line input in the UI's styles (the cursor in
// reverse video, nothing else styled). Enter is left to the dialog; the
// newline binding breaks lines.
func newTextArea(m *Model, placeholder string, newline key.Binding) textarea.Model {
	ta := textarea.New()
	ta.Prompt = ""
	ta.ShowLineNumbers = false
	ta.Placeholder = placeholder
	ta.CharLimit, ta.MaxHeight, ta.MaxWidth = 0, 0, 0
	plain := m.st.r.NewStyle()
	style := textarea.Style{Base: plain, CursorLine: plain, CursorLineNumber: plain, EndOfBuffer: plain,
		LineNumber: plain, Placeholder: m.st.dim, Prompt: plain, Text: plain}
	ta.FocusedStyle, ta.BlurredStyle = style, style
	ta.Cursor.SetMode(cursor.CursorStatic)
	ta.Cursor.Style = m.st.cursor
	ta.KeyMap.InsertNewline = newline
	return ta
}

func (d *messageDialog) update(m *Model, msg tea.KeyMsg) tea.Cmd {
	if d.busy {
		return nil
	}
	switch {
	case key.Matches(msg, m.keys.Cancel):
		m.dialog = nil
		return nil
	case msg.Type == tea.KeyTab:
		if d.canInterrupt {
			d.interrupt = !d.interrupt
		}
		return nil
	case key.Matches(msg, m.keys.Submit):
		in := core.MessageInput{Text: strings.TrimSpace(d.input.Value()), Delivery: core.DeliveryQueued}
		if d.interrupt {
			in.Delivery = core.DeliveryInterrupt
		}
		d.busy, d.err = true, ""
		return messageCmd(m.ctx, m.client, d.id, d.taskID, in)
	}
	var cmd tea.Cmd
	d.input, cmd = d.input.Update(msg)
	return cmd
}

func (d *messageDialog) view(m *Model, w int) string {
	st := m.st
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
		lines = append(lines, truncate(checkbox(d.interrupt)+" interrupt (tab) — "+note, w))
	}
	hint := "enter send · " + m.keys.Newline.Help().Key + " new line · esc cancel · a new message supersedes a pending question"
	for _, l := range wrap(hint, w) {
		lines = append(lines, st.dim.Render(l))
	}
	if f := d.footer(m, w); f != "" {
		lines = append(lines, "", f)
	}
	return strings.Join(lines, "\n")
}

func (d *messageDialog) help(k keyMap) []key.Binding {
	return []key.Binding{k.Submit, k.Newline, k.Interrupt, k.Cancel}
}

// ---- set the status: mark done (d) ----

// statusDialog confirms a status change, done preselected; the other
// statuses are a choice away. The engine decides which moves are legal and
// its refusal stays in the dialog.
type statusDialog struct {
	base
	taskID  string
	title   string
	from    core.Status
	holder  string // who has the task now, as the tree says it
	running bool   // an agent run is live
	choice  int    // index in core.Statuses
}

func newStatusDialog(id int, t *core.Task) *statusDialog {
	d := &statusDialog{base: base{id: id}, taskID: t.ID, title: oneLine(t.Title), from: t.Status,
		holder: assigneeLabel(t), running: t.Session != nil && t.Session.State.Live()}
	d.choice = statusIndex(core.StatusDone)
	return d
}

func statusIndex(s core.Status) int {
	for i, st := range core.Statuses {
		if st == s {
			return i
		}
	}
	return 0
}

func (d *statusDialog) to() core.Status { return core.Statuses[d.choice] }

func (d *statusDialog) update(m *Model, msg tea.KeyMsg) tea.Cmd {
	if d.busy {
		return nil
	}
	n := len(core.Statuses)
	move := func(i int) {
		if i = (i + n) % n; i != d.choice {
			d.choice, d.err = i, ""
		}
	}
	switch {
	case key.Matches(msg, m.keys.Yes), d.err == "" && key.Matches(msg, m.keys.Submit):
		d.busy, d.err = true, ""
		m.setStatus("", false)
		return statusCmd(m.ctx, m.client, d.id, d.taskID, d.from, d.to())
	case key.Matches(msg, m.keys.No):
		m.dialog = nil
	case msg.Type == tea.KeyUp || msg.Type == tea.KeyShiftTab:
		move(d.choice - 1)
	case msg.Type == tea.KeyDown || msg.Type == tea.KeyTab:
		move(d.choice + 1)
	case msg.Type == tea.KeyRunes && len(msg.Runes) == 1:
		switch r := msg.Runes[0]; {
		case r == 'k':
			move(d.choice - 1)
		case r == 'j':
			move(d.choice + 1)
		case r >= '1' && int(r-'0') <= n:
			move(int(r - '1'))
		}
	}
	return nil
}

func (d *statusDialog) view(m *Model, w int) string {
	st := m.st
	to := d.to()
	title := fmt.Sprintf("Task %s: %s → %s?", d.taskID, d.from, to)
	if to == core.StatusDone {
		title = fmt.Sprintf("Mark task %s done?", d.taskID)
	}
	lines := []string{st.boxTitle.Render(truncate(title, w)), truncate(d.title, w)}
	g, _ := statusGlyph(d.from)
	lines = append(lines, st.dim.Render(truncate(fmt.Sprintf("now %s %s · with %s", g, d.from, d.holder), w)), "")
	for i, s := range core.Statuses {
		mark := "  "
		if i == d.choice {
			mark = st.fieldFocus.Render("> ")
		}
		g, _ := statusGlyph(s)
		text := fmt.Sprintf("%d) %s %s", i+1, g, s)
		switch {
		case s == d.from:
			text += st.dim.Render("  (now)")
		case s == core.StatusDone:
			text += st.dim.Render("  signs it off")
		}
		lines = append(lines, "  "+mark+truncate(text, w-4))
	}
	lines = append(lines, "")
	var note []string
	switch to {
	case core.StatusDone, core.StatusCancelled:
		if d.running {
			note = append(note, "Its agent is running: "+string(to)+" halts it (the run is cancelled).")
		} else {
			note = append(note, "Done and cancelled halt a running agent; none runs now.")
		}
		note = append(note, "A pending question goes stale; its parent's agent and tasks waiting on it are woken.")
	default:
		note = append(note, "Only the status changes: no agent is started or stopped.")
	}
	for _, l := range note {
		lines = append(lines, wrap(l, w)...)
	}
	lines = append(lines, "", st.helpKey.Render("y/enter")+" set "+string(to)+"   "+st.helpKey.Render("↑↓/1-5")+" choose   "+st.helpKey.Render("n/esc")+" cancel")
	if f := d.footer(m, w); f != "" {
		lines = append(lines, "", f)
	}
	return strings.Join(lines, "\n")
}

func (d *statusDialog) help(k keyMap) []key.Binding {
	return []key.Binding{k.SetStatus, k.Choose, k.CancelDialog}
}

// ---- hand on (o) ----

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
}

// hoLabel is the width of the field labels' column.
const hoLabel = 11

func newHandoffDialog(m *Model, id int, t *core.Task) *handoffDialog {
	d := &handoffDialog{base: base{id: id}, taskID: t.ID, title: oneLine(t.Title), autopilot: t.Autopilot, loading: true}
	if t.Assignee != nil {
		a := *t.Assignee
		d.assignee = &a
	}
	if t.HandedBy != nil {
		a := *t.HandedBy
		d.handedBy = &a
	}
	d.filter = newInput(m, "type to filter, or any name", 20)
	d.input = newTextArea(m, "message (optional)", m.keys.Newline)
	d.resize(m)
	d.setChoices(m, nil, nil)
	d.setFocus(hoTo)
	return d
}

// resize fits the fields to the dialog and the list and the message box
// to the screen's height.
func (d *handoffDialog) resize(m *Model) {
	w := m.dialogWidth() - 4 - hoLabel
	d.filter.Width = max(1, w-1)
	d.input.SetWidth(w)
	d.input.SetHeight(clamp(m.h-21, 1, messageRows))
	d.rows = clamp(m.h-19, 2, 8)
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
func (d *handoffDialog) setChoices(m *Model, roles []core.Role, persons []core.Person) {
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
	for _, p := range m.profiles {
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
		for _, p := range m.profiles {
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

func (d *handoffDialog) loaded(m *Model, msg assigneesMsg) {
	d.loading = false
	if msg.err != nil {
		d.loadErr = msg.what + ": " + errorText(msg.err)
	}
	d.setChoices(m, msg.roles, msg.persons)
}

func (d *handoffDialog) update(m *Model, msg tea.KeyMsg) tea.Cmd {
	if d.busy {
		return nil
	}
	switch {
	case key.Matches(msg, m.keys.Cancel):
		m.dialog = nil
		return nil
	case msg.Type == tea.KeyTab || msg.Type == tea.KeyShiftTab:
		d.setFocus(d.focus + 1)
		return nil
	case d.focus == hoTo && msg.Type == tea.KeyEnter && !msg.Alt:
		d.setFocus(hoMessage)
		return nil
	case d.focus == hoMessage && key.Matches(msg, m.keys.Submit):
		in := core.HandoffInput{To: d.target(), Message: strings.TrimSpace(d.input.Value())}
		d.busy, d.err = true, ""
		m.setStatus("", false)
		return handoffCmd(m.ctx, m.client, d.id, d.taskID, in)
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
		return nil
	}
	var cmd tea.Cmd
	if d.focus == hoTo {
		before := d.filter.Value()
		d.filter, cmd = d.filter.Update(msg)
		if d.filter.Value() != before {
			d.refilter(d.selected())
		}
		return cmd
	}
	d.input, cmd = d.input.Update(msg)
	return cmd
}

func (d *handoffDialog) view(m *Model, w int) string {
	st := m.st
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
		hint = "enter hand on · " + m.keys.Newline.Help().Key + " new line · tab the name · esc cancel"
	}
	for _, l := range wrap(hint, w) {
		lines = append(lines, st.dim.Render(l))
	}
	if f := d.footer(m, w); f != "" {
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

// describeAssignee says who an assignee is: "you", "role mock", "person
// alice", "task k3f9qa".
func describeAssignee(a core.Ref) string {
	if a.IsOperator() {
		return "you"
	}
	if a.Kind == "" {
		return a.Name
	}
	return a.Describe()
}
