package core

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Spend is what agents reported spending: token counts and a cost. Cost is
// in Currency (ISO 4217, "USD": the first one reported); a task whose
// agents never reported a cost has Currency "". Costs reported in any
// other currency are in Others, one a currency, never added to Cost
// (ADR 0075).
type Spend struct {
	Tokens     int64   `json:"tokens"`
	Input      int64   `json:"input_tokens"`
	Output     int64   `json:"output_tokens"`
	Thought    int64   `json:"thought_tokens"`
	CacheRead  int64   `json:"cache_read_tokens"`
	CacheWrite int64   `json:"cache_write_tokens"`
	Cost       float64 `json:"cost"`
	Currency   string  `json:"currency"`
	Others     []Cost  `json:"other_costs,omitempty"`
	// Estimated: EstimatedTokens of Tokens are kandev's estimate from the
	// text an agent streamed in a turn it had not reported yet (4 bytes a
	// token; ADR 0077), until the agent's own figure replaces it.
	Estimated       bool  `json:"estimated,omitempty"`
	EstimatedTokens int64 `json:"estimated_tokens,omitempty"`
}

// TokensText writes a spend's tokens for people, an estimate marked:
// "12.3k tokens", "~10.2k tokens (10.2k estimated)".
func (s Spend) TokensText() string {
	if s.EstimatedTokens <= 0 {
		return FormatTokens(s.Tokens) + " tokens"
	}
	return "~" + FormatTokens(s.Tokens) + " tokens (" + FormatTokens(s.EstimatedTokens) + " estimated)"
}

// SetEstimate marks n of a spend's tokens as an estimate (0: none).
func (s *Spend) SetEstimate(n int64) {
	s.EstimatedTokens = max(n, 0)
	s.Estimated = s.EstimatedTokens > 0
}

// Cost is an amount in one currency.
type Cost struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

// Costs lists a spend's costs, one a currency, its first currency first;
// nil when it reported none.
func (s Spend) Costs() []Cost {
	var out []Cost
	if s.Currency != "" {
		out = append(out, Cost{s.Cost, s.Currency})
	}
	for _, c := range s.Others {
		if c.Amount != 0 {
			out = append(out, c)
		}
	}
	return out
}

// AddCost adds a cost to the spend in its own currency: to Cost when it
// is the spend's (or the spend has none yet), else to Others; never
// across currencies.
func (s *Spend) AddCost(c Cost) {
	if c.Currency == "" {
		return
	}
	if s.Currency == "" || s.Currency == c.Currency {
		s.Currency = c.Currency
		s.Cost += c.Amount
		return
	}
	for i := range s.Others {
		if s.Others[i].Currency == c.Currency {
			s.Others[i].Amount += c.Amount
			return
		}
	}
	s.Others = append(s.Others, c)
}

// CostText writes a spend's costs for people, each currency apart:
// "$1.24", "$1.24 and 0.40 EUR"; "" when it reported none.
func (s Spend) CostText() string {
	var parts []string
	for _, c := range s.Costs() {
		parts = append(parts, FormatCost(c.Amount, c.Currency))
	}
	return strings.Join(parts, " and ")
}

// Rates are exchange rates a person configured (currency_rates):
// Rates["EUR/USD"] = 1.08 says one EUR is 1.08 USD. The inverse is
// implied; rates are never chained.
type Rates map[string]float64

// ParseRates reads currency_rates: "EUR/USD=1.08,GBP/USD=1.27".
func ParseRates(s string) (Rates, error) {
	out := Rates{}
	bad := func(f, why string) (Rates, error) {
		return nil, Errorf(CodeValidation, "currency rate %q: %s; give rates such as EUR/USD=1.08,GBP/USD=1.27 (one EUR is 1.08 USD)", f, why)
	}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		pair, num, ok := strings.Cut(f, "=")
		if !ok {
			return bad(f, "no \"=\"")
		}
		from, to, ok := strings.Cut(strings.ToUpper(strings.TrimSpace(pair)), "/")
		if !ok || !isCode(from) || !isCode(to) || from == to {
			return bad(f, "not two different three-letter currencies FROM/TO")
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 || v > 1e6 || v < 1e-6 {
			return bad(f, "the rate must be a number between 0.000001 and 1000000")
		}
		if _, dup := out[from+"/"+to]; dup {
			return bad(f, "given twice")
		}
		if _, dup := out[to+"/"+from]; dup {
			return bad(f, "its inverse is given too")
		}
		out[from+"/"+to] = v
	}
	return out, nil
}

func isCode(c string) bool {
	if len(c) != 3 {
		return false
	}
	for i := range 3 {
		if c[i] < 'A' || c[i] > 'Z' {
			return false
		}
	}
	return true
}

// String writes rates as ParseRates reads them, in order.
func (r Rates) String() string {
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + "=" + strconv.FormatFloat(r[k], 'f', -1, 64)
	}
	return strings.Join(keys, ",")
}

// Convert turns an amount in one currency into another with a configured
// rate (or its inverse); ok is false when none is set.
func (r Rates) Convert(amount float64, from, to string) (float64, bool) {
	if from == to {
		return amount, true
	}
	if v, ok := r[from+"/"+to]; ok {
		return amount * v, true
	}
	if v, ok := r[to+"/"+from]; ok {
		return amount / v, true
	}
	return 0, false
}

// RateHint says how a person sets a rate from one currency to another.
func RateHint(from, to string) string {
	return fmt.Sprintf("kandev config set currency_rates %s/%s=RATE (one %s is RATE %s)", from, to, from, to)
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

// Spent says how much of an amount a spend is, in the amount's kind: for
// a cost, what it spent in the amount's currency, and what it spent in
// others converted with rates. Unpriced are the costs in a currency with
// no rate to the amount's: nothing says how much of the budget they are.
func (a Amount) Spent(s Spend, r Rates) (spent float64, unpriced []Cost) {
	if a.Kind == BudgetTokens {
		return float64(s.Tokens), nil
	}
	for _, c := range s.Costs() {
		if v, ok := r.Convert(c.Amount, c.Currency, a.Currency); ok {
			spent += v
		} else {
			unpriced = append(unpriced, c)
		}
	}
	return spent, unpriced
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
	// Unpriced: what the subtree spent in currencies with no configured
	// rate to the budget's; not in Spent (and a budget check halts the
	// tree for it: ADR 0075).
	Unpriced []Cost `json:"unpriced,omitempty"`
	// Fault: why the tree is held for a person although its budget was
	// not spent (an implausible report, with its raw figures; a cost
	// without a rate). A person's budget change clears it.
	Fault string `json:"fault,omitempty"`
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
	out := s.TokensText()
	if c := s.CostText(); c != "" {
		out += " " + c
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
