package core

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Spend is what agents reported spending: token counts and a cost. Cost is
// in Currency (ISO 4217, "USD"); a task whose agents never reported a cost
// has Currency "".
type Spend struct {
	Tokens     int64   `json:"tokens"`
	Input      int64   `json:"input_tokens"`
	Output     int64   `json:"output_tokens"`
	Thought    int64   `json:"thought_tokens"`
	CacheRead  int64   `json:"cache_read_tokens"`
	CacheWrite int64   `json:"cache_write_tokens"`
	Cost       float64 `json:"cost"`
	Currency   string  `json:"currency"`
}

// TaskUsage is a task's spend: its own agents', and its subtree's (its own
// included), kept as they change, never computed when read.
type TaskUsage struct {
	Own  Spend `json:"own"`
	Tree Spend `json:"tree"`
	// Turns counts the turns that reported anything.
	Turns int `json:"turns"`
	// ContextUsed of ContextSize tokens were in the latest session's
	// context window at its last report (0: never reported).
	ContextUsed int64 `json:"context_used"`
	ContextSize int64 `json:"context_size"`
}

// Budget kinds.
const (
	BudgetCost   = "cost"
	BudgetTokens = "tokens"
)

// Amount is a budget's size: a cost in a currency, or a token count.
type Amount struct {
	Kind     string  `json:"kind"` // BudgetCost or BudgetTokens
	Value    float64 `json:"value"`
	Currency string  `json:"currency,omitempty"`
}

// String writes an amount as ParseAmount reads it.
func (a Amount) String() string {
	if a.Kind == BudgetTokens {
		return FormatTokens(int64(a.Value)) + "-tokens"
	}
	return strconv.FormatFloat(a.Value, 'f', -1, 64) + a.Currency
}

// ParseAmount reads a budget amount: a currency amount such as "5USD" or
// "2.50 EUR", or tokens such as "2M-tokens", "500k-tokens", "120000-tokens".
func ParseAmount(s string) (Amount, error) {
	in := strings.TrimSpace(s)
	bad := func(why string) (Amount, error) {
		return Amount{}, Errorf(CodeValidation, "budget %q: %s; give an amount such as 5USD or 2M-tokens", s, why)
	}
	if in == "" {
		return bad("empty")
	}
	lower := strings.ToLower(in)
	if num, ok := strings.CutSuffix(lower, "tokens"); ok {
		num = strings.TrimRight(strings.TrimSpace(num), "- ")
		mult := 1.0
		switch {
		case strings.HasSuffix(num, "k"):
			mult, num = 1e3, num[:len(num)-1]
		case strings.HasSuffix(num, "m"):
			mult, num = 1e6, num[:len(num)-1]
		case strings.HasSuffix(num, "g") || strings.HasSuffix(num, "b"):
			mult, num = 1e9, num[:len(num)-1]
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return bad("not a number of tokens")
		}
		v = math.Round(v * mult)
		if v <= 0 {
			return bad("must be more than zero")
		}
		if v > 1e15 {
			return bad("too large")
		}
		return Amount{Kind: BudgetTokens, Value: v}, nil
	}
	i := len(in)
	for i > 0 && isLetter(in[i-1]) {
		i--
	}
	cur := strings.ToUpper(in[i:])
	num := strings.TrimSpace(strings.TrimPrefix(in[:i], "$"))
	if strings.HasPrefix(in, "$") && cur == "" {
		cur = "USD"
	}
	if len(cur) != 3 {
		return bad("no currency (a three-letter code such as USD) or \"-tokens\"")
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return bad("not a number")
	}
	if v <= 0 {
		return bad("must be more than zero")
	}
	if v > 1e9 {
		return bad("too large")
	}
	return Amount{Kind: BudgetCost, Value: v, Currency: cur}, nil
}

func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// FormatTokens writes a token count short: 950, 12.3k, 2.1M.
func FormatTokens(n int64) string {
	switch {
	case n >= 1_000_000:
		return trimZero(strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64)) + "M"
	case n >= 10_000:
		return strconv.FormatInt(n/1000, 10) + "k"
	case n >= 1_000:
		return trimZero(strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64)) + "k"
	}
	return strconv.FormatInt(n, 10)
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }

// FormatCost writes a cost for people: "$1.24", "0.40 EUR".
func FormatCost(v float64, currency string) string {
	prec := 2
	if v != 0 && math.Abs(v) < 0.01 {
		prec = 4
	}
	n := strconv.FormatFloat(v, 'f', prec, 64)
	if currency == "USD" || currency == "" {
		return "$" + n
	}
	return n + " " + currency
}

// Spent says how much of an amount a spend is, in the amount's kind; ok is
// false when the spend is in another currency (nothing comparable).
func (a Amount) Spent(s Spend) (float64, bool) {
	if a.Kind == BudgetTokens {
		return float64(s.Tokens), true
	}
	if s.Currency == "" {
		return 0, true
	}
	if s.Currency != a.Currency {
		return 0, false
	}
	return s.Cost, true
}

// Format writes a quantity in the amount's kind.
func (a Amount) Format(v float64) string {
	if a.Kind == BudgetTokens {
		return FormatTokens(int64(v)) + " tokens"
	}
	return FormatCost(v, a.Currency)
}

// BudgetInfo is the budget that governs a task: its own or the nearest
// ancestor's that is reached first. Holder is the task whose budget it is
// (a subtree shares its root's budget); Spent is that subtree's spend in
// the budget's kind.
type BudgetInfo struct {
	Holder    string  `json:"holder"`
	Amount    Amount  `json:"amount"`
	Spent     float64 `json:"spent"`
	Remaining float64 `json:"remaining"`
	// Reached: the subtree spent it all; its turns are stopped and its
	// holder is with a person until the budget is raised.
	Reached bool `json:"reached"`
	// Noticed: the subtree's agents were told at 80%.
	Noticed bool `json:"noticed,omitempty"`
	SetBy   By   `json:"set_by,omitzero"`
}

// StallBudget is the Stall reason of a task whose subtree spent its
// budget: its turns were stopped and it is with a person until the budget
// is raised (then it goes back where it was).
const StallBudget = "Budget"

// OverBudget reports whether the task is with a person because its
// subtree spent its budget.
func (t Task) OverBudget() bool { return t.Stalled != nil && t.Stalled.Reason == StallBudget }

// UsageLine is a task's spend in one line for people ("12.3k tokens $0.42").
func (u *TaskUsage) UsageLine(tree bool) string {
	if u == nil {
		return ""
	}
	s := u.Own
	if tree {
		s = u.Tree
	}
	out := FormatTokens(s.Tokens) + " tokens"
	if s.Currency != "" {
		out += " " + FormatCost(s.Cost, s.Currency)
	}
	return out
}

// ContextLine is "used of size (pct%)" or "".
func (u *TaskUsage) ContextLine() string {
	if u == nil || u.ContextSize <= 0 {
		return ""
	}
	return fmt.Sprintf("%s of %s (%d%%)", FormatTokens(u.ContextUsed), FormatTokens(u.ContextSize), u.ContextUsed*100/u.ContextSize)
}
