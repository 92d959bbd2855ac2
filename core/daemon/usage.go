package daemon

import (
	"context"
	"net/http"

	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/engine"
	"github.com/kandev/kandev/core/wire"
)

// usageRoutes serves api.Spender. A budget is set on the operator's
// socket only (the agents' socket serves MCP routes alone), and the
// engine refuses anyone but a person.
func usageRoutes(m *http.ServeMux, eng *engine.Engine) {
	route(m, wire.SetBudget, keyed(eng.Spend.SetBudget))
	route(m, wire.Usage, func(ctx context.Context, in wire.UsageQuery) (api.UsageReport, error) {
		return eng.Spend.Usage(ctx, api.UsageInput(in))
	})
	route(m, wire.ListLimits, func(ctx context.Context, _ wire.None) ([]api.LimitStatus, error) { return eng.Spend.Limits(ctx) })
	route(m, wire.SetLimit, eng.Spend.SetLimit)
	route(m, wire.RemoveLimit, eng.Spend.RemoveLimit)
}
