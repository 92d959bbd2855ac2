package tui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// noChoice is a part on which nothing is chosen yet.
const noChoice = -1

// answerPart is one prompt of a (possibly multi-part) question: a choice
// among its options, or free text. choice is noChoice until the operator
// picks; choice == len(options) is "other" (type your own answer), which
// a permission question does not have: the engine takes only the agent's
// options there.
type answerPart struct {
	item   core.QuestionItem
	choice int
	other  bool // the part offers a free-text row after its options
	input  textinput.Model
}

func (p *answerPart) typing() bool {
	return len(p.item.Options) == 0 || (p.other && p.choice == len(p.item.Options))
}

// rows is how many rows the operator chooses among.
func (p *answerPart) rows() int {
	if p.other {
		return len(p.item.Options) + 1
	}
	return len(p.item.Options)
}

// answered: the part has a choice, or typed text.
func (p *answerPart) answered() bool {
	if p.typing() {
		return strings.TrimSpace(p.input.Value()) != ""
	}
	return p.choice != noChoice
}

// answerDialog answers the selected task's pending question to the
// operator (or, from a parent, the question its child escalated to them).
//
// An answer must never be mistaken (issue 22: typing "no, dont" and enter
// allowed a deploy). So nothing is chosen when it opens, enter with
// nothing chosen sends nothing, only the keys the part lists choose (a
// digit, y or n where one option alone is a yes or a no, ↑/↓), and any
// other key chooses nothing: it clears the choice and says which keys
// are. A permission question offers exactly the agent's options.
type answerDialog struct {
	base
	taskID string
	q      core.QuestionInfo
	parts  []answerPart
	cur    int
	hint   string // why the last key did nothing
	// holderFor is the parent, with the operator, whose subtask's question
	// (kind parent) this answers in its place: the answer goes to the
	// subtask as its parent's would (ADR 0069).
	holderFor string
}

// newHolderDialog answers, for parent, which is with the operator, the
// question q its subtask child asked it (issue 22: a on the parent said it
// had no pending question; issue 38: it opened the wrong one). The answer
// is the question's answer, as the parent's agent would give it.
func newHolderDialog(ui dialogUI, id int, parent, child *core.Task, q core.QuestionInfo) *answerDialog {
	d := newAnswerDialogFor(ui, id, child.ID, q)
	d.holderFor = parent.ID
	return d
}

func newAnswerDialog(ui dialogUI, id int, t *core.Task) *answerDialog {
	return newAnswerDialogFor(ui, id, t.ID, *t.PendingQuestion)
}

func newAnswerDialogFor(ui dialogUI, id int, taskID string, q core.QuestionInfo) *answerDialog {
	d := &answerDialog{base: base{id: id}, taskID: taskID, q: q}
	items := q.Questions
	if len(items) == 0 {
		items = []core.QuestionItem{{Prompt: q.Text}}
	}
	for _, it := range items {
		p := answerPart{item: it, choice: noChoice, other: q.Kind != core.QuestionPermission && len(it.Options) > 0,
			input: newInput(ui.st, "type an answer", ui.width-20)}
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

// yesNo is the option y (yes) or n (no) picks in p, or noChoice when
// none or several would: for a permission question the one option of
// kind allow_once (else the one allow_*), or reject_once (else the one
// reject_*); for another question the one option whose first word is
// "yes" or "no".
func (d *answerDialog) yesNo(p *answerPart, yes bool) int {
	find := func(match func(core.QuestionOption) bool) int {
		at := noChoice
		for i, o := range p.item.Options {
			if match(o) {
				if at != noChoice {
					return noChoice // ambiguous
				}
				at = i
			}
		}
		return at
	}
	if d.q.Kind == core.QuestionPermission {
		kind := "reject"
		if yes {
			kind = "allow"
		}
		if i := find(func(o core.QuestionOption) bool { return o.Description == kind+"_once" }); i != noChoice {
			return i
		}
		return find(func(o core.QuestionOption) bool { return strings.HasPrefix(o.Description, kind+"_") })
	}
	word := "no"
	if yes {
		word = "yes"
	}
	return find(func(o core.QuestionOption) bool {
		f := strings.FieldsFunc(strings.ToLower(o.Label), func(r rune) bool {
			return !(r >= 'a' && r <= 'z')
		})
		return len(f) > 0 && f[0] == word
	})
}

// keysText says which keys choose in p.
func (d *answerDialog) keysText(p *answerPart) string {
	n := len(p.item.Options)
	if n == 0 {
		return "type your answer"
	}
	var ks []string
	switch {
	case p.rows() == 1:
		ks = append(ks, "1")
	case p.rows() <= 9:
		ks = append(ks, fmt.Sprintf("1-%d", p.rows()))
	default:
		ks = append(ks, "1-9")
	}
	if i := d.yesNo(p, true); i != noChoice {
		ks = append(ks, "y ("+oneLine(p.item.Options[i].Label)+")")
	}
	if i := d.yesNo(p, false); i != noChoice {
		ks = append(ks, "n ("+oneLine(p.item.Options[i].Label)+")")
	}
	return strings.Join(ks, ", ") + " or ↑↓ choose"
}

func (d *answerDialog) update(ui dialogUI, msg tea.KeyMsg) (action, tea.Cmd) {
	if d.busy {
		return nil, nil
	}
	k := ui.keys
	p := &d.parts[d.cur]
	rows := p.rows()
	move := func(delta int) {
		switch {
		case p.choice == noChoice && delta > 0:
			p.choice = 0
		case p.choice == noChoice:
			p.choice = rows - 1
		default:
			p.choice = (p.choice + delta + rows) % rows
		}
		d.focusPart(d.cur)
	}
	d.hint = ""
	switch {
	case key.Matches(msg, k.Cancel):
		return closeDialog{}, nil
	case msg.Type == tea.KeyTab:
		d.focusPart(d.cur + 1)
		return nil, nil
	case msg.Type == tea.KeyShiftTab:
		d.focusPart(d.cur - 1)
		return nil, nil
	case key.Matches(msg, k.Submit):
		return d.submit(), nil
	case rows > 0 && msg.Type == tea.KeyUp:
		move(-1)
		return nil, nil
	case rows > 0 && msg.Type == tea.KeyDown:
		move(1)
		return nil, nil
	case p.typing():
		var cmd tea.Cmd
		p.input, cmd = p.input.Update(msg)
		return nil, cmd
	}
	// A part of options: only its keys choose.
	if msg.Type == tea.KeyRunes && len(msg.Runes) == 1 {
		r := msg.Runes[0]
		if n := int(r - '0'); r >= '1' && r <= '9' && n <= rows {
			p.choice = n - 1
			d.focusPart(d.cur)
			return nil, nil
		}
		if r == 'y' || r == 'n' {
			if i := d.yesNo(p, r == 'y'); i != noChoice {
				p.choice = i
				return nil, nil
			}
		}
	}
	p.choice = noChoice
	d.hint = fmt.Sprintf("%q is not an option, so nothing is chosen: %s, then enter", msg.String(), d.keysText(p))
	return nil, nil
}

// submit moves to the next part, or sends the answer once every part has
// one; enter with nothing chosen sends nothing and says why.
func (d *answerDialog) submit() action {
	p := &d.parts[d.cur]
	if !p.answered() {
		if p.typing() && len(p.item.Options) > 0 {
			d.hint = "type your answer first, or choose one of the options (↑↓)"
		} else if p.typing() {
			d.hint = "type your answer first"
		} else {
			d.hint = "nothing is chosen yet, so nothing was sent: " + d.keysText(p)
		}
		return nil
	}
	if d.cur < len(d.parts)-1 {
		d.focusPart(d.cur + 1)
		return nil
	}
	for i := range d.parts {
		if !d.parts[i].answered() {
			d.focusPart(i)
			d.hint = fmt.Sprintf("part %d has no answer yet: %s", i+1, d.keysText(&d.parts[i]))
			return nil
		}
	}
	d.busy, d.err = true, ""
	return answerTask{taskID: d.taskID, in: api.AnswerInput{QuestionID: d.q.ID, Answers: d.answers()}}
}

func (d *answerDialog) view(ui dialogUI, w int) string {
	st := ui.st
	title := fmt.Sprintf("Answer task %s · question %s", d.taskID, d.q.ID)
	if d.q.Kind == core.QuestionPermission {
		title = fmt.Sprintf("Permission for task %s · question %s", d.taskID, d.q.ID)
	}
	lines := []string{st.boxTitle.Render(truncate(title, w)), ""}
	if d.holderFor != "" {
		lines[0] = st.boxTitle.Render(truncate(fmt.Sprintf("Answer task %s's question to task %s", d.taskID, d.holderFor), w))
		lines = append(lines[:1], wrap(fmt.Sprintf("Task %s is with you: you answer question %s in its place, and task %s reads the answer next.", d.holderFor, d.q.ID, d.taskID), w)...)
		lines = append(lines, "")
	}
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
			if o.Description != "" && d.q.Kind != core.QuestionPermission {
				text += st.dim.Render(" — " + oneLine(o.Description))
			}
			lines = append(lines, "  "+mark+truncate(text, w-4))
		}
		switch {
		case p.other:
			mark := "  "
			if p.typing() {
				mark = "> "
			}
			other := fmt.Sprintf("%d) other: ", len(p.item.Options)+1)
			if p.typing() {
				other += p.input.View()
			} else {
				other += st.dim.Render("(type your own answer)")
			}
			lines = append(lines, "  "+mark+truncate(other, w-4))
		case len(p.item.Options) == 0:
			lines = append(lines, "  > "+p.input.View())
		}
		if i == d.cur && len(p.item.Options) > 0 && p.choice == noChoice {
			lines = append(lines, st.dim.Render("  (nothing chosen)"))
		}
		lines = append(lines, "")
	}
	hint := d.keysText(&d.parts[d.cur]) + " · enter sends · esc cancel"
	if len(d.parts) > 1 {
		hint = d.keysText(&d.parts[d.cur]) + " · tab next part · enter next/send · esc cancel"
	}
	for _, l := range wrap(hint, w) {
		lines = append(lines, st.dim.Render(l))
	}
	if d.hint != "" {
		lines = append(lines, wrap(st.errText.Render("✗ ")+d.hint, w)...)
	}
	if f := d.footer(st, w); f != "" {
		lines = append(lines, "", f)
	}
	return strings.Join(lines, "\n")
}

func (d *answerDialog) help(k keyMap) []key.Binding {
	if p := &d.parts[d.cur]; len(p.item.Options) > 0 && !p.typing() {
		return []key.Binding{k.AnswerPick, k.AnswerSend, relabel(k.Cancel, "cancel")}
	}
	return []key.Binding{k.AnswerSend, k.NextField, relabel(k.Cancel, "cancel")}
}
