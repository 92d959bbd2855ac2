package engine

import (
	"context"

	"github.com/kandev/kandev/core"
)

// FollowAppends serves api.Client's operation of that name: the subscription (an Events
// stream's, or GET /v1/events's) receives taskID's appends alone from the
// next event on, none when taskID is "".
func (ts *Tasks) FollowAppends(ctx context.Context, subscription, taskID string) error {
	if !ts.k.bus.SetAppends(subscription, Appends{Task: taskID}) {
		return core.Errorf(core.CodeNotFound, "no event stream %q (it has ended)", subscription)
	}
	return nil
}
