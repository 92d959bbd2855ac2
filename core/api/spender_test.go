package api

import (
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
)

func TestCheckBudgetChange(t *testing.T) {
	cur := &core.Amount{Kind: core.BudgetCost, Value: 5, Currency: "USD"}
	if a, err := CheckBudgetChange(cur, BudgetInput{Add: "2.5USD"}); err != nil || a.Value != 7.5 {
		t.Fatalf("add: %+v %v", a, err)
	}
	if a, err := CheckBudgetChange(cur, BudgetInput{Set: "1M-tokens"}); err != nil || a.Kind != core.BudgetTokens {
		t.Fatalf("set another kind: %+v %v", a, err)
	}
	for _, in := range []BudgetInput{{}, {Set: "1USD", Add: "1USD"}, {Add: "1EUR"}, {Add: "1k-tokens"}} {
		if _, err := CheckBudgetChange(cur, in); err == nil {
			t.Errorf("%+v: accepted", in)
		}
	}
	if _, err := CheckBudgetChange(nil, BudgetInput{Add: "1USD"}); err == nil || !strings.Contains(err.Error(), "no budget of its own") {
		t.Errorf("add to none: %v", err)
	}
}
