package daemonclient

import (
	"context"
	"net/url"
	"time"

	"github.com/kandev/kandev/core"
)

var _ core.Spender = (*Client)(nil)

// SetBudget implements core.Spender.
func (c *Client) SetBudget(ctx context.Context, id string, in core.BudgetInput) (core.Task, error) {
	var t core.Task
	return t, c.do(ctx, "POST", "/v1/tasks/"+esc(id)+"/budget", in, &t)
}

// Usage implements core.Spender.
func (c *Client) Usage(ctx context.Context, in core.UsageInput) (core.UsageReport, error) {
	q := url.Values{}
	if in.By != "" {
		q.Set("by", in.By)
	}
	if !in.Since.IsZero() {
		q.Set("since", in.Since.UTC().Format(time.RFC3339Nano))
	}
	path := "/v1/usage"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var r core.UsageReport
	return r, c.do(ctx, "GET", path, nil, &r)
}
