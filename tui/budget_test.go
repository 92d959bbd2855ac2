package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// A tree over its budget: its root is marked BUDGET (not escalated), each
// row shows its cost (a parent its subtree's, Σ), and the detail pane
// gives the figures, the context window's use and the way out.
func TestBudgetRowAndDetail(t *testing.T) {
	root := core.Task{ID: "bud001", Title: "Spendy root", Status: core.StatusTodo, Profile: "mock",
		CreatedAt: testNow, UpdatedAt: testNow, YourTurn: true, Assignee: &core.Ref{Kind: "person", Name: "operator"},
		Session: session("bud001", core.SessionCancelled, ago(time.Minute)),
		Stalled: &core.Stall{Reason: core.StallBudget, From: core.ParseBy("role:mock"), Detail: "the tree of task bud001 spent $1.05 of its $1.00 budget", At: testNow},
		Usage: &core.TaskUsage{Own: core.Spend{Tokens: 120, Cost: 0.4, Currency: "USD"}, Tree: core.Spend{Tokens: 300, Cost: 1.05, Currency: "USD"},
			ContextUsed: 50000, ContextSize: 200000},
		Budget: &core.BudgetInfo{Holder: "bud001", Amount: core.Amount{Kind: core.BudgetCost, Value: 1, Currency: "USD"}, Spent: 1.05, Reached: true}}
	kid := core.Task{ID: "bud002", Title: "Kid", ParentID: "bud001", Status: core.StatusInProgress, Profile: "mock",
		CreatedAt: testNow, UpdatedAt: testNow, Assignee: &core.Ref{Kind: "role", Name: "mock"},
		Usage: &core.TaskUsage{Own: core.Spend{Tokens: 180, Cost: 0.65, Currency: "USD"}, Tree: core.Spend{Tokens: 180, Cost: 0.65, Currency: "USD"}}}
	r := rowFor(&root, testNow, 0)
	var badges []string
	for _, b := range r.badges {
		badges = append(badges, badgeText[b])
	}
	if got := strings.Join(badges, " "); got != "BUDGET" || r.cost != "Σ$1.05" {
		t.Fatalf("root row: badges %q cost %q", got, r.cost)
	}
	if k := rowFor(&kid, testNow, 0); k.cost != "$0.65" {
		t.Fatalf("kid row cost %q", k.cost)
	}
	d := newDriver(t, newFake(root, kid), 200, 30)
	d.mustShow("BUDGET", "Σ$1.05", "$0.65")
	d.mustShow("spent 120 tokens $0.40 · subtree 300 tokens $1.05", "context 50k of 200k (25%) · budget $1.05 of $1.00",
		"BUDGET the tree of task bud001 spent $1.05 of its $1.00 budget; raise it", "budget bud001 --add AMOUNT")
}

// An estimate from streamed text is marked in the detail pane (ADR 0077),
// and a spend limit's halt says the limit's own way out, not a budget's.
func TestEstimateAndLimitInTheDetail(t *testing.T) {
	own := core.Spend{Tokens: 10240}
	own.SetEstimate(10240)
	detail := "the home's day limit is reached: $1.20 of $1.00 spent this day; turns under it wait until 2026-03-03 00:00 UTC, when the next day begins (or raise it: kandev limit set --per day --amount AMOUNT)"
	task := core.Task{ID: "lim001", Title: "Limited", Status: core.StatusTodo, Profile: "mock",
		CreatedAt: testNow, UpdatedAt: testNow, YourTurn: true, Assignee: &core.Ref{Kind: "person", Name: "operator"},
		Session: session("lim001", core.SessionCancelled, ago(time.Minute)),
		Stalled: &core.Stall{Reason: core.StallBudget, From: core.ParseBy("role:mock"), Detail: detail, At: testNow},
		Usage:   &core.TaskUsage{Own: own, Tree: own}}
	d := newDriver(t, newFake(task), 240, 30)
	d.mustShow("BUDGET", "spent ~10k tokens (10k estimated)", "kandev limit set --per day")
	d.mustNotShow("budget lim001 --add")
}

// budgetHeld is a tree stopped by its own $1.00 budget.
func budgetHeld() core.Task {
	return core.Task{ID: "bud001", Title: "Spendy root", Status: core.StatusTodo, Profile: "mock",
		CreatedAt: testNow, UpdatedAt: testNow, YourTurn: true, Assignee: &core.Ref{Kind: "person", Name: "operator"},
		Session: session("bud001", core.SessionCancelled, ago(time.Minute)),
		Stalled: &core.Stall{Reason: core.StallBudget, From: core.ParseBy("role:mock"), Detail: "the tree of task bud001 spent $1.05 of its $1.00 budget", At: testNow},
		Budget:  &core.BudgetInfo{Holder: "bud001", Amount: core.Amount{Kind: core.BudgetCost, Value: 1, Currency: "USD"}, Spent: 1.05, Reached: true}}
}

// The budget dialog takes the amount, then always shows the cut turn's
// choice before it sends anything; esc cancels at either step.
func TestBudgetDialogActions(t *testing.T) {
	held := budgetHeld()
	d := newBudgetDialog(testUI(), 1, &held, "bud001")
	wantAction(t, press(t, d, "+4USD", "enter"), nil)
	if !d.choosing || !strings.Contains(d.view(testUI(), 70), "1) drop") {
		t.Fatalf("enter on the amount must show the choice, not send: %q", d.view(testUI(), 70))
	}
	wantAction(t, press(t, d, "3", "enter"), setBudget{taskID: "bud001", in: api.BudgetInput{Add: "4USD", CutTurn: api.CutTurnContinue}})

	// The cursor starts on drop; enter confirms it once it is shown.
	d = newBudgetDialog(testUI(), 2, &held, "bud001")
	wantAction(t, press(t, d, "5USD", "enter", "enter"), setBudget{taskID: "bud001", in: api.BudgetInput{Set: "5USD", CutTurn: api.CutTurnDrop}})
	d = newBudgetDialog(testUI(), 3, &held, "bud001")
	wantAction(t, press(t, d, "+1USD", "enter", "down", "enter"), setBudget{taskID: "bud001", in: api.BudgetInput{Add: "1USD", CutTurn: api.CutTurnRedeliver}})

	// A bad amount stays in the dialog with the reason.
	d = newBudgetDialog(testUI(), 4, &held, "bud001")
	wantAction(t, press(t, d, "+lots", "enter"), nil)
	if d.choosing || d.err == "" {
		t.Fatalf("a bad amount must be refused in place: choosing %v err %q", d.choosing, d.err)
	}
	wantAction(t, press(t, newBudgetDialog(testUI(), 5, &held, "bud001"), "esc"), closeDialog{})
	wantAction(t, press(t, newBudgetDialog(testUI(), 6, &held, "bud001"), "+2USD", "enter", "esc"), closeDialog{})

	// A budget not reached cut no turn: there is nothing to choose.
	free := core.Task{ID: "fre001", Budget: &core.BudgetInfo{Holder: "fre001", Amount: core.Amount{Kind: core.BudgetCost, Value: 1, Currency: "USD"}, Spent: 0.2}}
	wantAction(t, press(t, newBudgetDialog(testUI(), 7, &free, "fre001"), "+1USD", "enter"), setBudget{taskID: "fre001", in: api.BudgetInput{Add: "1USD"}})
}

// $ opens the budget dialog on a task with a budget, says why not on one
// without or held by a spend limit, and sends the chosen cut turn; the
// result, or the daemon's refusal, is shown.
func TestBudgetKeyRaisesWithTheChosenCutTurn(t *testing.T) {
	limit := core.Task{ID: "lim001", Title: "Limited", Status: core.StatusTodo, Profile: "mock", CreatedAt: testNow, UpdatedAt: testNow,
		Stalled: &core.Stall{Reason: core.StallBudget, From: core.ParseBy("role:mock"), At: testNow,
			Detail: "the home's day limit is reached: $1.20 of $1.00 spent this day (or raise it: kandev limit set --per day --amount AMOUNT)"}}
	plain := core.Task{ID: "pln001", Title: "No budget", Status: core.StatusTodo, Profile: "mock", CreatedAt: testNow, UpdatedAt: testNow}
	f := newFake(budgetHeld(), limit, plain)
	d := newDriver(t, f, 200, 30)

	d.selectTask("pln001")
	d.keys("$")
	if d.m.dialog != nil {
		t.Fatal("a task without a budget opens no budget dialog")
	}
	d.mustShow("pln001 has no budget to raise")
	d.selectTask("lim001")
	d.keys("$")
	if d.m.dialog != nil {
		t.Fatal("a task held by a spend limit opens no budget dialog")
	}
	d.mustShow("held by a spend limit")

	d.selectTask("bud001")
	d.mustShow("raise it: $ (or kandev task budget bud001 --add AMOUNT)")
	d.keys("$")
	d.mustShow("Budget of task bud001", "now $1.05 of $1.00 spent")
	d.keys("esc")
	if d.m.dialog != nil || f.callCount("SetBudget") != 0 {
		t.Fatal("esc must cancel without a call")
	}

	f.setErr("SetBudget", &core.Error{Code: core.CodeValidation, Message: "the budget is 1USD; add an amount of the same kind"})
	d.keys("$")
	d.typeText("+2M-tokens")
	d.keys("enter")
	d.mustShow("1) drop", "2) redeliver", "3) continue")
	if f.callCount("SetBudget") != 0 {
		t.Fatal("enter on the amount must not send")
	}
	d.keys("enter")
	d.mustShow("refused", "add an amount of the same kind")

	f.setErr("SetBudget", nil)
	d.keys("esc", "$")
	d.typeText("+2USD")
	d.keys("enter", "3", "enter")
	if n := len(f.budgets); n != 2 || f.budgets[1] != (api.BudgetInput{Add: "2USD", CutTurn: api.CutTurnContinue}) {
		t.Fatalf("budget calls %+v", f.budgets)
	}
	if d.m.dialog != nil {
		t.Fatal("the dialog closes once the budget is set")
	}
	d.mustShow("budget of task bud001: $1.05 of $3.00 spent; its agent is told to go on")
	d.keys("?")
	d.mustShow("raise its budget")
}
