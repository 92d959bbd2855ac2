package store

import (
	"context"
	"testing"
	"time"
)

// A report adds to its task's own sums and to the subtree sums of the task
// and every ancestor given; a cost in another currency than a sum's is
// kept apart in the row's other costs, not added to the sum; a task's
// view carries its row.
func TestAddUsageSumsUpTheTree(t *testing.T) {
	ctx := context.Background()
	db := openFreshDB(t)
	mustInsert(t, db, i2Task("r", ""), i2Task("c", "r"), i2Task("g", "c"))
	at := time.Now().UTC()
	add := func(id string, u Usage, turn bool, anc ...string) {
		t.Helper()
		if err := db.AddUsage(ctx, UsageReport{TaskID: id, SessionID: "s-" + id, Profile: "mock", At: at, Usage: u, Turn: turn,
			ContextUsed: 5, ContextSize: 100}, anc); err != nil {
			t.Fatal(err)
		}
	}
	add("g", Usage{Input: 10, Output: 2, Tokens: 12}, true, "c", "r")
	add("g", Usage{CostMicros: 300, Currency: "USD"}, false, "c", "r")
	add("c", Usage{Tokens: 5, CostMicros: 100, Currency: "USD"}, true, "r")
	add("c", Usage{CostMicros: 999, Currency: "EUR"}, false, "r")
	rows, err := db.TaskUsages(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, c, r := rows["g"], rows["c"], rows["r"]
	if g.Own.Tokens != 12 || g.Own.Input != 10 || g.Own.CostMicros != 300 || g.Turns != 1 || g.TreeTokens != 12 || g.ContextSize != 100 {
		t.Fatalf("g %+v", g)
	}
	if c.Own.Tokens != 5 || c.Own.CostMicros != 100 || c.Own.Currency != "USD" || c.TreeTokens != 17 || c.TreeCost != 400 {
		t.Fatalf("c %+v", c)
	}
	if r.Own.Tokens != 0 || r.TreeTokens != 17 || r.TreeCost != 400 || r.TreeCurrency != "USD" || r.Turns != 0 {
		t.Fatalf("r %+v", r)
	}
	// The EUR cost is kept apart, in c's and r's other costs.
	if c.OtherCosts != "EUR=999" || c.TreeOtherCosts != "EUR=999" || r.TreeOtherCosts != "EUR=999" || r.OtherCosts != "" || g.TreeOtherCosts != "" {
		t.Fatalf("other costs: c %q %q r %q %q g %q", c.OtherCosts, c.TreeOtherCosts, r.OtherCosts, r.TreeOtherCosts, g.TreeOtherCosts)
	}
	// One group a key and a currency: never a sum across currencies.
	groups, err := db.UsageSince(ctx, time.Time{}, "task")
	if err != nil || len(groups) != 4 || groups[0].Key != "g" || groups[0].Turns != 1 {
		t.Fatalf("by task %+v %v", groups, err)
	}
	for _, g := range groups {
		if g.Key == "c" && g.Usage.Currency == "EUR" && g.Usage.CostMicros != 999 {
			t.Fatalf("c's EUR group %+v", g)
		}
	}
	if v, err := db.TaskView(ctx, "c"); err != nil || v.Usage == nil || v.Usage.TreeTokens != 17 {
		t.Fatalf("view %+v %v", v.Usage, err)
	}
	if err := db.SetBudget(ctx, "r", "tokens", 20, "", "person:op", false, false); err != nil {
		t.Fatal(err)
	}
	if err := db.SetBudgetMarks(ctx, "r", true, true); err != nil {
		t.Fatal(err)
	}
	if u, ok, err := db.TaskUsage(ctx, "r"); err != nil || !ok || u.BudgetKind != "tokens" || !u.BudgetReached || u.BudgetBy != "person:op" {
		t.Fatalf("budget row %+v %v %v", u, ok, err)
	}
	// A row whose text holds the separator the whole-table read cuts at is
	// read again column by column, never misread.
	if err := db.SetBudget(ctx, "c", "cost", 5, "USD", "person:a\x1fb", false, false); err != nil {
		t.Fatal(err)
	}
	all, err := db.TaskUsages(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all["c"].BudgetBy != "person:a\x1fb" || all["c"].TreeTokens != 17 || all["r"].BudgetKind != "tokens" {
		t.Fatalf("all rows: c %+v r %+v (%d rows)", all["c"], all["r"], len(all))
	}
}
