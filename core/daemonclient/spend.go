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

var _ api.Limiter = (*Spend)(nil)

// Limits implements api.Limiter.
func (s *Spend) Limits(ctx context.Context) ([]api.LimitStatus, error) {
	return call(ctx, s.c, wire.ListLimits, wire.None{})
}

// SetLimit implements api.Limiter.
func (s *Spend) SetLimit(ctx context.Context, in api.LimitInput) (api.LimitStatus, error) {
	return call(ctx, s.c, wire.SetLimit, in)
}

// RemoveLimit implements api.Limiter.
func (s *Spend) RemoveLimit(ctx context.Context, in api.LimitInput) (api.LimitStatus, error) {
	return call(ctx, s.c, wire.RemoveLimit, in)
}
