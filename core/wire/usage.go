package wire

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/kandev/kandev/core"
)

// The summary's usage column: a task's spend as numbers, then, when it
// has a budget of its own, a space and the budget's JSON. At 100,000 tasks
// that all spent, JSON for every one doubled the TUI's whole-tree load.
//
//	OWN;TREE;TURNS,CONTEXT_USED,CONTEXT_SIZE[,OWN_EST,TREE_EST][ BUDGET-JSON]
//
// where OWN and TREE are TOKENS,INPUT,OUTPUT,THOUGHT,CACHE_READ,CACHE_WRITE,
// COST,CURRENCY[,OTHERS] (the cost in Go's shortest round-trip form; the
// currency three letters, as the engine records it; OTHERS, when it spent
// in other currencies, CUR=COST joined by "|"), OWN_EST and TREE_EST the
// tokens of OWN and TREE that are an estimate (only when one is), and "-"
// stands for no usage.

func appendSummaryUsage(b []byte, t *core.Task) ([]byte, error) {
	if u := t.Usage; u != nil {
		b = appendSummarySpend(b, &u.Own)
		b = append(b, ';')
		b = appendSummarySpend(b, &u.Tree)
		b = append(b, ';')
		b = strconv.AppendInt(b, int64(u.Turns), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, u.ContextUsed, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, u.ContextSize, 10)
		if u.Own.EstimatedTokens != 0 || u.Tree.EstimatedTokens != 0 {
			b = append(b, ',')
			b = strconv.AppendInt(b, u.Own.EstimatedTokens, 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, u.Tree.EstimatedTokens, 10)
		}
	} else {
		b = append(b, '-')
	}
	if t.Budget != nil {
		j, err := json.Marshal(t.Budget)
		if err != nil {
			return nil, fmt.Errorf("summary of task %s: %w", t.ID, err)
		}
		b = append(b, ' ')
		b = appendEscaped(b, string(j))
	}
	return b, nil
}

func appendSummarySpend(b []byte, s *core.Spend) []byte {
	for _, n := range [...]int64{s.Tokens, s.Input, s.Output, s.Thought, s.CacheRead, s.CacheWrite} {
		b = strconv.AppendInt(b, n, 10)
		b = append(b, ',')
	}
	b = strconv.AppendFloat(b, s.Cost, 'g', -1, 64)
	b = append(b, ',')
	b = append(b, summaryCurrency(s.Currency)...)
	sep := byte(',')
	for _, c := range s.Others {
		if cur := summaryCurrency(c.Currency); cur != "" && !strings.ContainsAny(cur, "=|") {
			b = append(b, sep)
			sep = '|'
			b = append(b, cur...)
			b = append(b, '=')
			b = strconv.AppendFloat(b, c.Amount, 'g', -1, 64)
		}
	}
	return b
}

// summaryCurrency keeps the column's separators out of a currency (the
// engine records only three-letter codes; anything else is dropped here).
func summaryCurrency(c string) string {
	if strings.ContainsAny(c, ",; \t\n\r\\") {
		return ""
	}
	return c
}

func readSummaryUsage(t *core.Task, s string) error {
	usage, budget, _ := strings.Cut(s, " ")
	if budget != "" {
		var b core.BudgetInfo
		if err := json.Unmarshal([]byte(budget), &b); err != nil {
			return err
		}
		t.Budget = &b
	}
	if usage == "-" {
		return nil
	}
	parts := strings.Split(usage, ";")
	if len(parts) != 3 {
		return fmt.Errorf("%q is not OWN;TREE;TURNS,USED,SIZE", usage)
	}
	var u core.TaskUsage
	if err := readSummarySpend(parts[0], &u.Own); err != nil {
		return err
	}
	if err := readSummarySpend(parts[1], &u.Tree); err != nil {
		return err
	}
	rest := strings.Split(parts[2], ",")
	if len(rest) != 3 && len(rest) != 5 {
		return fmt.Errorf("%q is not TURNS,USED,SIZE[,OWN_EST,TREE_EST]", parts[2])
	}
	var n [5]int64
	for i, f := range rest {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return err
		}
		n[i] = v
	}
	u.Turns, u.ContextUsed, u.ContextSize = int(n[0]), n[1], n[2]
	u.Own.SetEstimate(n[3])
	u.Tree.SetEstimate(n[4])
	t.Usage = &u
	return nil
}

func readSummarySpend(s string, sp *core.Spend) error {
	f := strings.Split(s, ",")
	if len(f) != 8 && len(f) != 9 {
		return fmt.Errorf("%q is not a spend of 8 or 9 fields", s)
	}
	var n [6]int64
	for i := range n {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return err
		}
		n[i] = v
	}
	cost, err := strconv.ParseFloat(f[6], 64)
	if err != nil {
		return err
	}
	*sp = core.Spend{Tokens: n[0], Input: n[1], Output: n[2], Thought: n[3], CacheRead: n[4], CacheWrite: n[5], Cost: cost, Currency: f[7]}
	if len(f) == 9 {
		for _, o := range strings.Split(f[8], "|") {
			cur, num, ok := strings.Cut(o, "=")
			v, err := strconv.ParseFloat(num, 64)
			if !ok || err != nil {
				return fmt.Errorf("%q is not CUR=COST", o)
			}
			sp.Others = append(sp.Others, core.Cost{Amount: v, Currency: cur})
		}
	}
	return nil
}
