package daemonclient

import (
	"context"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/wire"
)

var _ core.Spender = (*Client)(nil)

// SetBudget implements core.Spender.
func (c *Client) SetBudget(ctx context.Context, id string, in core.BudgetInput) (core.Task, error) {
	return call(ctx, c, wire.SetBudget, wire.Keyed[core.BudgetInput]{Key: id, In: in})
}

// Usage implements core.Spender.
func (c *Client) Usage(ctx context.Context, in core.UsageInput) (core.UsageReport, error) {
	return call(ctx, c, wire.Usage, wire.UsageQuery(in))
}
