package wire

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/kandev/kandev/core"
)

// A task's usage and budget go through the summary and come back equal;
// a task without either has an empty column.
func TestSummaryUsageRoundTrip(t *testing.T) {
	spend := core.Spend{Tokens: 1 << 40, Input: 12, Output: 3, Thought: 4, CacheRead: 5, CacheWrite: 6, Cost: 0.1 + 0.2, Currency: "USD"}
	tasks := []*core.Task{
		{ID: "a", Title: "no spend", Status: core.StatusTodo},
		{ID: "b", Title: "spent", Status: core.StatusTodo,
			Usage: &core.TaskUsage{Own: spend, Tree: core.Spend{Tokens: 9, Cost: 1e-9, Currency: "EUR"}, Turns: 3, ContextUsed: 7, ContextSize: 200000}},
		{ID: "c", Title: "budget only", Status: core.StatusTodo,
			Budget: &core.BudgetInfo{Holder: "c", Amount: core.Amount{Kind: core.BudgetCost, Value: 5, Currency: "USD"}, SetBy: core.ParseBy("person:a b\tc")}},
		{ID: "d", Title: "both", Status: core.StatusTodo, Usage: &core.TaskUsage{Own: spend, Tree: spend},
			Budget: &core.BudgetInfo{Holder: "d", Amount: core.Amount{Kind: core.BudgetTokens, Value: 2e6}, Spent: 3, Reached: true}},
	}
	var buf bytes.Buffer
	if err := WriteTaskSummaries(&buf, tasks); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTaskSummaries(bytes.NewReader(buf.Bytes()), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range tasks {
		if !reflect.DeepEqual(got[i].Usage, want.Usage) || !reflect.DeepEqual(got[i].Budget, want.Budget) {
			t.Errorf("task %s: usage %+v budget %+v, want %+v %+v", want.ID, got[i].Usage, got[i].Budget, want.Usage, want.Budget)
		}
	}
}
