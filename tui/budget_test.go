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
