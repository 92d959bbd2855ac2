package api

import (
	"context"
	"time"

	"github.com/kandev/kandev/core"
)

// BudgetInput fixes or raises a task's budget: Set replaces it, Add raises
// it by an amount of the same kind. Only a person may.
type BudgetInput struct {
	Set string `json:"set,omitempty"`
	Add string `json:"add,omitempty"`
	// CutTurn says what becomes of the turns a reached budget cut when
	// this change lets the tree go on: CutTurnDrop ("" too: nothing is
	// spent unless a person says so, ADR 0076), CutTurnRedeliver or
	// CutTurnContinue.
	CutTurn string `json:"cut_turn,omitempty"`
}

// What becomes of a turn a reached budget cut, when a person raises it.
const (
	// CutTurnDrop: its message is not delivered again (the default).
	CutTurnDrop = "drop"
	// CutTurnRedeliver: its message is delivered again from the start.
	CutTurnRedeliver = "redeliver"
	// CutTurnContinue: the agent gets a short note to go on where it
	// stopped, not the message again.
	CutTurnContinue = "continue"
)

// CheckCutTurn checks a CutTurn value and gives the default for "".
func CheckCutTurn(v string) (string, error) {
	switch v {
	case "":
		return CutTurnDrop, nil
	case CutTurnDrop, CutTurnRedeliver, CutTurnContinue:
		return v, nil
	}
	return "", core.Errorf(core.CodeValidation, "cut turn %q: give redeliver (its message again, from the start), continue (a short note to go on where it stopped) or drop (nothing; the default)", v)
}

// UsageInput selects spend to report: since a time, grouped by task,
// profile or day.
type UsageInput struct {
	Since time.Time `json:"since"`
	By    string    `json:"by"` // "task" (default), "profile", "day"
}

// UsageRow is one group of a usage report.
type UsageRow struct {
	Key   string `json:"key"` // task id, profile name or YYYY-MM-DD
	Title string `json:"title,omitempty"`
	core.Spend
	Turns int `json:"turns"`
}

// UsageReport is spend since a time, by group, with its total. Costs in
// another currency than the total's are left out of the total and counted
// in Other.
type UsageReport struct {
	Since time.Time  `json:"since"`
	By    string     `json:"by"`
	Rows  []UsageRow `json:"rows"`
	Total core.Spend `json:"total"`
	Turns int        `json:"turns"`
}

// Spender is a client that knows spend and budgets: the engine and the
// daemon's client. Front ends that have one show usage and set budgets.
type Spender interface {
	// SetBudget fixes or raises a task's budget (a person only).
	SetBudget(ctx context.Context, id string, in BudgetInput) (core.Task, error)
	// Usage reports recorded spend.
	Usage(ctx context.Context, in UsageInput) (UsageReport, error)
}

// CheckBudgetChange applies a BudgetInput to a task's current budget
// amount (nil: none) and returns the new one.
func CheckBudgetChange(cur *core.Amount, in BudgetInput) (core.Amount, error) {
	switch {
	case in.Set != "" && in.Add != "":
		return core.Amount{}, core.Errorf(core.CodeValidation, "give --set or --add, not both")
	case in.Set != "":
		return core.ParseAmount(in.Set)
	case in.Add != "":
		a, err := core.ParseAmount(in.Add)
		if err != nil {
			return core.Amount{}, err
		}
		if cur == nil {
			return core.Amount{}, core.Errorf(core.CodeValidation, "the task has no budget of its own to add to; use --set")
		}
		if cur.Kind != a.Kind || cur.Currency != a.Currency {
			return core.Amount{}, core.Errorf(core.CodeValidation, "the budget is %s; add an amount of the same kind", cur.String())
		}
		a.Value += cur.Value
		return a, nil
	}
	return core.Amount{}, core.Errorf(core.CodeValidation, "give --set AMOUNT or --add AMOUNT")
}
