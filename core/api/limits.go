package api

import (
	"context"
	"time"

	"github.com/kandev/kandev/core"
)

// LimitInput names a spend limit (ADR 0077): Scope home, profile or role,
// Name the profile's or role's, Period day or week; Amount (5USD,
// 2M-tokens) for a set. Only a person may set or remove one.
type LimitInput struct {
	Scope  string `json:"scope"`
	Name   string `json:"name,omitempty"`
	Period string `json:"period"`
	Amount string `json:"amount,omitempty"`
}

// LimitStatus is a limit with what was spent under it in its window now.
type LimitStatus struct {
	core.Limit
	WindowStart time.Time `json:"window_start"`
	WindowEnd   time.Time `json:"window_end"`
	// Spent is this window's spend in the limit's kind (other currencies
	// converted with the configured rates); Unpriced, costs without one.
	Spent    float64     `json:"spent"`
	Unpriced []core.Cost `json:"unpriced,omitempty"`
	Reached  bool        `json:"reached"`
	Detail   string      `json:"detail,omitempty"`
}

// Limiter is a client that knows spend limits: the engine and the
// daemon's client.
type Limiter interface {
	Limits(ctx context.Context) ([]LimitStatus, error)
	SetLimit(ctx context.Context, in LimitInput) (LimitStatus, error)
	RemoveLimit(ctx context.Context, in LimitInput) (LimitStatus, error)
}
