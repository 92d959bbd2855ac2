package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// budgetDialog raises or fixes the budget of a task's tree, as `kandev
// task budget ID --add|--set AMOUNT --cut-turn …` does: first the amount
// (a leading + adds to it, else it is set), then, when the tree is held
// by its budget, what becomes of the turns the budget cut. That choice is
// always shown before anything is sent: the cursor starts on drop (the
// default, nothing spent again) and the operator confirms it or picks
// another (ADR 0076: nothing spends again unless a person says so).
type budgetDialog struct {
	base
	taskID string // whose budget is changed: the holder of the tree's budget
	title  string
	now    string // the budget as it stands, "" when none is known
	held   bool   // the tree is stopped by its budget: turns were cut
	input  textinput.Model
	// choosing: the amount is taken; the cut turn's choice is shown.
	choosing bool
	in       api.BudgetInput // the amount taken
	choice   int             // index in cutTurns
}

// cutTurns are the choices for a cut turn, the default first, each with
// what it does.
var cutTurns = []struct{ value, what string }{
	{api.CutTurnDrop, "its message is not delivered again: nothing is spent on it again"},
	{api.CutTurnRedeliver, "its message is delivered again from the start: it spends again"},
	{api.CutTurnContinue, "its agent gets a short note to go on where it stopped"},
}

// budgetTarget is the task whose budget the budget key changes for t
// (the holder of the budget its tree spends), or why there is none.
func budgetTarget(t *core.Task) (string, string) {
	if b := t.Budget; b != nil && b.Amount.Kind != "" {
		if b.Holder != "" {
			return b.Holder, ""
		}
		return t.ID, ""
	}
	if t.OverBudget() && !core.ByLimit(t.Stalled.Detail) {
		return t.ID, ""
	}
	if t.OverBudget() {
		return "", "task " + t.ID + " is held by a spend limit, not a budget: kandev limit set raises it"
	}
	return "", "task " + t.ID + " has no budget to raise (kandev task budget " + t.ID + " --set AMOUNT sets one)"
}

func newBudgetDialog(ui dialogUI, id int, t *core.Task, target string) *budgetDialog {
	d := &budgetDialog{base: base{id: id}, taskID: target, title: oneLine(t.Title), held: t.OverBudget()}
	if b := t.Budget; b != nil && b.Amount.Kind != "" {
		d.now = b.Amount.Format(b.Spent) + " of " + b.Amount.Format(b.Amount.Value) + " spent"
		d.held = d.held || b.Reached
	}
	d.input = newInput(ui.st, "+5USD adds, 5USD sets", ui.width-8)
	d.input.Focus()
	return d
}

// amount reads the amount field: a leading + adds, else it sets. Its
// syntax is checked here (core.ParseAmount, as the daemon does); whether
// it fits the budget is the daemon's to say.
func (d *budgetDialog) amount() (api.BudgetInput, error) {
	s := strings.TrimSpace(d.input.Value())
	add := strings.HasPrefix(s, "+")
	s = strings.TrimSpace(strings.TrimPrefix(s, "+"))
	if s == "" {
		return api.BudgetInput{}, core.Errorf(core.CodeValidation, "give an amount: +5USD adds to the budget, 5USD sets it")
	}
	if _, err := core.ParseAmount(s); err != nil {
		return api.BudgetInput{}, err
	}
	if add {
		return api.BudgetInput{Add: s}, nil
	}
	return api.BudgetInput{Set: s}, nil
}

func (d *budgetDialog) update(ui dialogUI, msg tea.KeyMsg) (action, tea.Cmd) {
	if d.busy {
		return nil, nil
	}
	if key.Matches(msg, ui.keys.Cancel) {
		return closeDialog{}, nil
	}
	if !d.choosing {
		if key.Matches(msg, ui.keys.Submit) {
			in, err := d.amount()
			if err != nil {
				d.failed(err)
				return nil, nil
			}
			d.in, d.err = in, ""
			if !d.held {
				// No turn was cut: there is nothing to choose.
				d.busy = true
				return setBudget{taskID: d.taskID, in: d.in}, nil
			}
			d.choosing, d.choice = true, 0
			return nil, nil
		}
		var cmd tea.Cmd
		d.input, cmd = d.input.Update(msg)
		return nil, cmd
	}
	n := len(cutTurns)
	switch {
	case key.Matches(msg, ui.keys.Submit):
		in := d.in
		in.CutTurn = cutTurns[d.choice].value
		d.busy, d.err = true, ""
		return setBudget{taskID: d.taskID, in: in}, nil
	case msg.Type == tea.KeyShiftTab:
		// Back to the amount.
		d.choosing, d.err = false, ""
	case msg.Type == tea.KeyUp:
		d.choice = (d.choice + n - 1) % n
	case msg.Type == tea.KeyDown || msg.Type == tea.KeyTab:
		d.choice = (d.choice + 1) % n
	case msg.Type == tea.KeyRunes && len(msg.Runes) == 1:
		if r := msg.Runes[0]; r >= '1' && int(r-'0') <= n {
			d.choice = int(r - '1')
		}
	}
	return nil, nil
}

func (d *budgetDialog) view(ui dialogUI, w int) string {
	st := ui.st
	title := "Budget of task " + d.taskID
	lines := []string{st.boxTitle.Render(truncate(title+" · "+d.title, w))}
	if d.now != "" {
		lines = append(lines, st.dim.Render(truncate("now "+d.now, w)))
	}
	lines = append(lines, "")
	if !d.choosing {
		lines = append(lines, truncate("> amount: "+d.input.View(), w))
		lines = append(lines, hanging("+AMOUNT adds to the budget, AMOUNT sets it (5USD, 2M-tokens).", w, 0)...)
		if d.held {
			lines = append(lines, hanging("The tree is stopped by its budget: next you choose what becomes of the turn it cut.", w, 0)...)
		}
		lines = append(lines, "", st.helpKey.Render("enter")+" next   "+st.helpKey.Render("esc")+" cancel")
	} else {
		what := "set to " + d.in.Set
		if d.in.Add != "" {
			what = "raised by " + d.in.Add
		}
		lines = append(lines, truncate("The budget is "+what+". The turn the budget cut:", w), "")
		for i, c := range cutTurns {
			mark := "  "
			if i == d.choice {
				mark = st.fieldFocus.Render("> ")
			}
			lines = append(lines, hanging(mark+string(rune('1'+i))+") "+c.value+" — "+c.what, w, 7)...)
		}
		lines = append(lines, "", st.helpKey.Render("enter")+" raise with "+cutTurns[d.choice].value+"   "+
			st.helpKey.Render("↑↓/1-3")+" choose   "+st.helpKey.Render("shift+tab")+" amount   "+st.helpKey.Render("esc")+" cancel")
	}
	if f := d.footer(st, w); f != "" {
		lines = append(lines, "", f)
	}
	return strings.Join(lines, "\n")
}

func (d *budgetDialog) help(k keyMap) []key.Binding {
	if d.choosing {
		return []key.Binding{relabel(k.Submit, "raise"), k.Choose, relabel(k.PrevField, "amount"), k.Cancel}
	}
	return []key.Binding{relabel(k.Submit, "next"), k.Cancel}
}
