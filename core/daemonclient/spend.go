package daemonclient

import (
	"context"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/wire"
)

// Spend is the client's spend area: budgets and usage.
type Spend struct{ c *caller }

var _ core.Spender = (*Spend)(nil)

// SetBudget implements core.Spender.
func (s *Spend) SetBudget(ctx context.Context, id string, in core.BudgetInput) (core.Task, error) {
	return call(ctx, s.c, wire.SetBudget, wire.Keyed[core.BudgetInput]{Key: id, In: in})
}

// Usage implements core.Spender.
func (s *Spend) Usage(ctx context.Context, in core.UsageInput) (core.UsageReport, error) {
	return call(ctx, s.c, wire.Usage, wire.UsageQuery(in))
}
