package daemon

import (
	"strconv"

	"github.com/kandev/kandev/core"
)

// appendUsage writes a task's usage as json.Marshal does: at 100,000 tasks
// that all spent, reflection on these two objects was most of a listing.
func appendUsage(b []byte, u *core.TaskUsage) ([]byte, error) {
	var err error
	b = append(b, `{"own":`...)
	if b, err = appendSpend(b, &u.Own); err != nil {
		return b, err
	}
	b = append(b, `,"tree":`...)
	if b, err = appendSpend(b, &u.Tree); err != nil {
		return b, err
	}
	b = append(b, `,"turns":`...)
	b = strconv.AppendInt(b, int64(u.Turns), 10)
	b = append(b, `,"context_used":`...)
	b = strconv.AppendInt(b, u.ContextUsed, 10)
	b = append(b, `,"context_size":`...)
	b = strconv.AppendInt(b, u.ContextSize, 10)
	return append(b, '}'), nil
}

func appendSpend(b []byte, s *core.Spend) ([]byte, error) {
	b = append(b, `{"tokens":`...)
	b = strconv.AppendInt(b, s.Tokens, 10)
	b = append(b, `,"input_tokens":`...)
	b = strconv.AppendInt(b, s.Input, 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, s.Output, 10)
	b = append(b, `,"thought_tokens":`...)
	b = strconv.AppendInt(b, s.Thought, 10)
	b = append(b, `,"cache_read_tokens":`...)
	b = strconv.AppendInt(b, s.CacheRead, 10)
	b = append(b, `,"cache_write_tokens":`...)
	b = strconv.AppendInt(b, s.CacheWrite, 10)
	b = append(b, `,"cost":`...)
	b, err := appendFloat(b, s.Cost)
	if err != nil {
		return b, err
	}
	b = append(b, `,"currency":`...)
	b = appendString(b, s.Currency)
	if len(s.Others) > 0 {
		b = append(b, `,"other_costs":`...)
		if b, err = appendCosts(b, s.Others); err != nil {
			return b, err
		}
	}
	if s.Estimated {
		b = append(b, `,"estimated":true`...)
	}
	if s.EstimatedTokens != 0 {
		b = append(b, `,"estimated_tokens":`...)
		b = strconv.AppendInt(b, s.EstimatedTokens, 10)
	}
	return append(b, '}'), nil
}

func appendCosts(b []byte, cs []core.Cost) ([]byte, error) {
	var err error
	b = append(b, '[')
	for i, c := range cs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"amount":`...)
		if b, err = appendFloat(b, c.Amount); err != nil {
			return b, err
		}
		b = append(b, `,"currency":`...)
		b = appendString(b, c.Currency)
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

func appendBudget(b []byte, x *core.BudgetInfo) ([]byte, error) {
	var err error
	b = append(b, `{"holder":`...)
	b = appendString(b, x.Holder)
	b = append(b, `,"amount":{"kind":`...)
	b = appendString(b, x.Amount.Kind)
	b = append(b, `,"value":`...)
	if b, err = appendFloat(b, x.Amount.Value); err != nil {
		return b, err
	}
	if x.Amount.Currency != "" {
		b = append(b, `,"currency":`...)
		b = appendString(b, x.Amount.Currency)
	}
	b = append(b, `},"spent":`...)
	if b, err = appendFloat(b, x.Spent); err != nil {
		return b, err
	}
	b = append(b, `,"remaining":`...)
	if b, err = appendFloat(b, x.Remaining); err != nil {
		return b, err
	}
	b = append(b, `,"reached":`...)
	b = strconv.AppendBool(b, x.Reached)
	if x.Noticed {
		b = append(b, `,"noticed":true`...)
	}
	if x.SetBy != (core.By{}) {
		b = append(b, `,"set_by":`...)
		b = appendBy(b, x.SetBy)
	}
	if len(x.Unpriced) > 0 {
		b = append(b, `,"unpriced":`...)
		if b, err = appendCosts(b, x.Unpriced); err != nil {
			return b, err
		}
	}
	if x.Fault != "" {
		b = append(b, `,"fault":`...)
		b = appendString(b, x.Fault)
	}
	return append(b, '}'), nil
}
