package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
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
