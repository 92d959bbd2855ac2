package engine

import (
	"reflect"
	"testing"

	"github.com/kandev/kandev/core"
)

// The stats' spend is every task's own once; a cost in a currency other
// than the first met with a cost is kept apart in the total's Others,
// never added, and a report without a cost fixes no currency.
func TestAddSpend(t *testing.T) {
	var total core.Spend
	for _, s := range []core.Spend{
		{Tokens: 5, Input: 4, Output: 1, Currency: "EUR"}, // no cost: no currency fixed
		{Tokens: 10, Input: 6, Output: 4, Cost: 0.5, Currency: "USD"},
		{Tokens: 20, Cost: 2, Currency: "EUR"},
		{Tokens: 1, Thought: 1, CacheRead: 3, CacheWrite: 2, Cost: 0.25, Currency: "USD"},
	} {
		addSpend(&total, s)
	}
	want := core.Spend{Tokens: 36, Input: 10, Output: 5, Thought: 1, CacheRead: 3, CacheWrite: 2, Cost: 0.75, Currency: "USD",
		Others: []core.Cost{{Amount: 2, Currency: "EUR"}}}
	if !reflect.DeepEqual(total, want) {
		t.Fatalf("total %+v, want %+v", total, want)
	}
}
