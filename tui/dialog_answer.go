package tui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
)

// answerPart is one prompt of a (possibly multi-part) question: a choice
// among its options, or free text. choice == len(options) means "other".
type answerPart struct {
	item   core.QuestionItem
	choice int
	input  textinput.Model
}

func (p *answerPart) typing() bool { return p.choice >= len(p.item.Options) }

// answerDialog answers the selected task's pending question to the
// operator.
type answerDialog struct {
	base
	taskID string
	q      core.QuestionInfo
	parts  []answerPart
	cur    int
}

func newAnswerDialog(ui dialogUI, id int, t *core.Task) *answerDialog {
	q := *t.PendingQuestion
	d := &answerDialog{base: base{id: id}, taskID: t.ID, q: q}
	items := q.Questions
	if len(items) == 0 {
		items = []core.QuestionItem{{Prompt: q.Text}}
	}
	for _, it := range items {
		p := answerPart{item: it, input: newInput(ui.st, "type an answer", ui.width-20)}
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

func (d *answerDialog) update(ui dialogUI, msg tea.KeyMsg) (action, tea.Cmd) {
	if d.busy {
		return nil, nil
	}
	k := ui.keys
	p := &d.parts[d.cur]
	nOpt := len(p.item.Options)
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
		if d.cur < len(d.parts)-1 {
			d.focusPart(d.cur + 1)
			return nil, nil
		}
		d.busy, d.err = true, ""
		return answerTask{taskID: d.taskID, in: core.AnswerInput{QuestionID: d.q.ID, Answers: d.answers()}}, nil
	case nOpt > 0 && msg.Type == tea.KeyUp:
		p.choice = (p.choice + nOpt) % (nOpt + 1)
		d.focusPart(d.cur)
		return nil, nil
	case nOpt > 0 && msg.Type == tea.KeyDown:
		p.choice = (p.choice + 1) % (nOpt + 1)
		d.focusPart(d.cur)
		return nil, nil
	case nOpt > 0 && !p.typing() && msg.Type == tea.KeyRunes && len(msg.Runes) == 1:
		if n := int(msg.Runes[0] - '0'); n >= 1 && n <= nOpt {
			p.choice = n - 1
			return nil, nil
		}
		if msg.Runes[0] == 'j' {
			p.choice = (p.choice + 1) % (nOpt + 1)
			d.focusPart(d.cur)
		} else if msg.Runes[0] == 'k' {
			p.choice = (p.choice + nOpt) % (nOpt + 1)
			d.focusPart(d.cur)
		}
		return nil, nil
	}
	if p.typing() {
		var cmd tea.Cmd
		p.input, cmd = p.input.Update(msg)
		return nil, cmd
	}
	return nil, nil
}

func (d *answerDialog) view(ui dialogUI, w int) string {
	st := ui.st
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
	if f := d.footer(st, w); f != "" {
		lines = append(lines, "", f)
	}
	return strings.Join(lines, "\n")
}

func (d *answerDialog) help(k keyMap) []key.Binding {
	return []key.Binding{k.Submit, k.NextField, k.Cancel}
}
