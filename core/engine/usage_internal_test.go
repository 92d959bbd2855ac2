package engine

import (
	"testing"

	"github.com/kandev/kandev/store"
)

// A session's cumulative cost becomes spend by what it grew; one that goes
// backwards is a count from zero (a new agent session), all of it new.
func TestCostDelta(t *testing.T) {
	var s spendState
	steps := []struct {
		amount float64
		cur    string
		want   int64
	}{
		{0.10, "USD", 100_000},
		{0.25, "USD", 150_000},
		{0.25, "USD", 0},
		{0.05, "USD", 50_000}, // backwards: a new count
		{0.07, "EUR", 70_000}, // another currency: a new count too
	}
	for i, st := range steps {
		if got := s.costDelta("s1", st.amount, st.cur); got != st.want {
			t.Fatalf("step %d: delta %d, want %d", i, got, st.want)
		}
	}
	if got := s.costDelta("s2", 0.10, "USD"); got != 100_000 {
		t.Fatalf("another session: %d", got)
	}
}

// A row's budget is spent in its own terms: tokens, or a cost in its
// currency; a subtree's cost in another currency counts nothing.
func TestUsageFromStoreBudget(t *testing.T) {
	row := &store.TaskUsage{TaskID: "t1", Turns: 1, Own: store.Usage{Tokens: 10, CostMicros: 400_000, Currency: "USD"},
		TreeTokens: 30, TreeCost: 900_000, TreeCurrency: "USD", BudgetKind: "cost", BudgetValue: 1_000_000, BudgetCurrency: "USD"}
	u, b := usageFromStore(row)
	if u.Tree.Tokens != 30 || u.Own.Cost != 0.4 || b.Spent != 0.9 || b.Remaining < 0.0999 || b.Remaining > 0.1001 || b.Holder != "t1" {
		t.Fatalf("usage %+v budget %+v", u, b)
	}
	row.BudgetKind, row.BudgetValue, row.BudgetCurrency = "tokens", 20, ""
	if _, b = usageFromStore(row); b.Spent != 30 || b.Remaining != 0 {
		t.Fatalf("token budget %+v", b)
	}
	row.BudgetKind, row.BudgetValue, row.BudgetCurrency = "cost", 1_000_000, "EUR"
	if _, b = usageFromStore(row); b.Spent != 0 {
		t.Fatalf("budget in another currency %+v", b)
	}
	if u, b := usageFromStore(&store.TaskUsage{TaskID: "t2"}); u != nil || b != nil {
		t.Fatalf("an empty row: %+v %+v", u, b)
	}
}

// A currency is kept only as three letters, upper case.
func TestCurrencyCode(t *testing.T) {
	for in, want := range map[string]string{"USD": "USD", "eur": "EUR", "US$": "", "": "", "USDT": "", "a\tb": ""} {
		if got, ok := currencyCode(in); got != want || ok != (want != "") {
			t.Errorf("currencyCode(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
}
