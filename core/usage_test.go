package core

import (
	"strings"
	"testing"
)

func TestParseAmount(t *testing.T) {
	good := map[string]Amount{
		"5USD":         {Kind: BudgetCost, Value: 5, Currency: "USD"},
		"2.50 eur":     {Kind: BudgetCost, Value: 2.5, Currency: "EUR"},
		"$3":           {Kind: BudgetCost, Value: 3, Currency: "USD"},
		"2M-tokens":    {Kind: BudgetTokens, Value: 2e6},
		"500k-tokens":  {Kind: BudgetTokens, Value: 5e5},
		"1.5m tokens":  {Kind: BudgetTokens, Value: 1.5e6},
		"120000tokens": {Kind: BudgetTokens, Value: 120000},
	}
	for in, want := range good {
		got, err := ParseAmount(in)
		if err != nil || got != want {
			t.Errorf("ParseAmount(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		// What String writes reads back the same.
		if again, err := ParseAmount(got.String()); err != nil || again != got {
			t.Errorf("ParseAmount(%q) = %+v, %v; want %+v", got.String(), again, err, got)
		}
	}
	for in, why := range map[string]string{
		"": "empty", "5": "no currency", "5US": "no currency", "0USD": "more than zero", "-2USD": "more than zero",
		"NaN USD": "not a number", "1e99USD": "too large", "x-tokens": "not a number of tokens", "0k-tokens": "more than zero",
		"1e20-tokens": "too large",
	} {
		_, err := ParseAmount(in)
		if err == nil || CodeOf(err) != CodeValidation || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "5USD or 2M-tokens") {
			t.Errorf("ParseAmount(%q): %v, want a validation error saying %q", in, err, why)
		}
	}
}

func TestFormatSpend(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1500: "1.5k", 12345: "12k", 2_000_000: "2M", 2_150_000: "2.1M"} {
		if got := FormatTokens(n); got != want {
			t.Errorf("FormatTokens(%d) = %q, want %q", n, got, want)
		}
	}
	if got := FormatCost(1.234, "USD"); got != "$1.23" {
		t.Errorf("FormatCost = %q", got)
	}
	if got := FormatCost(0.0012, "EUR"); got != "0.0012 EUR" {
		t.Errorf("FormatCost = %q", got)
	}
}
