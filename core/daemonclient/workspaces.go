package daemonclient

import (
	"context"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/wire"
)

// Workspaces is the client's workspaces area: a task's worktree, its
// diff, review, push, pull request, merge and discard, and the prune.
type Workspaces struct{ c *caller }

var _ api.WorkspaceClient = (*Workspaces)(nil)

// TaskDiff implements api.WorkspaceClient.
func (w *Workspaces) TaskDiff(ctx context.Context, id string, in api.DiffInput) (api.TaskDiff, error) {
	return call(ctx, w.c, wire.TaskDiff, wire.Keyed[wire.DiffQuery]{Key: id, In: wire.DiffQuery(in)})
}

// TaskReview implements api.WorkspaceClient.
func (w *Workspaces) TaskReview(ctx context.Context, id string) (api.ReviewView, error) {
	return call(ctx, w.c, wire.TaskReview, wire.Key(id))
}

// PushTask implements api.WorkspaceClient.
func (w *Workspaces) PushTask(ctx context.Context, id string, in api.PushInput) (api.PushResult, error) {
	return call(ctx, w.c, wire.PushTask, wire.Keyed[api.PushInput]{Key: id, In: in})
}

// PullRequestTask implements api.WorkspaceClient.
func (w *Workspaces) PullRequestTask(ctx context.Context, id string, in api.PullRequestInput) (api.PullRequestResult, error) {
	return call(ctx, w.c, wire.PullRequestTask, wire.Keyed[api.PullRequestInput]{Key: id, In: in})
}

// MergeTask implements api.WorkspaceClient.
func (w *Workspaces) MergeTask(ctx context.Context, id string, in api.MergeInput) (api.MergeResult, error) {
	return call(ctx, w.c, wire.MergeTask, wire.Keyed[api.MergeInput]{Key: id, In: in})
}

// DiscardTask implements api.WorkspaceClient.
func (w *Workspaces) DiscardTask(ctx context.Context, id string, in api.DiscardTaskInput) (core.Task, error) {
	return call(ctx, w.c, wire.DiscardTask, wire.WithOptions(id, in))
}

// PruneWorktrees implements api.WorkspaceClient.
func (w *Workspaces) PruneWorktrees(ctx context.Context, in api.PruneInput) (api.PruneResult, error) {
	return call(ctx, w.c, wire.PruneWorktrees, in)
}
