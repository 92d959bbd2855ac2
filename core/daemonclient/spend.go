package daemonclient

import (
	"context"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/wire"
)

// Spend is the client's spend area: budgets and usage.
type Spend struct{ c *caller }

var _ api.Spender = (*Spend)(nil)

// SetBudget implements api.Spender.
func (s *Spend) SetBudget(ctx context.Context, id string, in api.BudgetInput) (core.Task, error) {
	return call(ctx, s.c, wire.SetBudget, wire.Keyed[api.BudgetInput]{Key: id, In: in})
}

// Usage implements api.Spender.
func (s *Spend) Usage(ctx context.Context, in api.UsageInput) (api.UsageReport, error) {
	return call(ctx, s.c, wire.Usage, wire.UsageQuery(in))
}
