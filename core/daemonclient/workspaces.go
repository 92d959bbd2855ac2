package daemonclient

import (
	"context"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/wire"
)

// Workspaces is the client's workspaces area: a task's worktree, its
// diff, review, push, pull request, merge and discard, and the prune.
type Workspaces struct{ c *caller }

var _ core.WorkspaceClient = (*Workspaces)(nil)

// TaskDiff implements core.WorkspaceClient.
func (w *Workspaces) TaskDiff(ctx context.Context, id string, in core.DiffInput) (core.TaskDiff, error) {
	return call(ctx, w.c, wire.TaskDiff, wire.Keyed[wire.DiffQuery]{Key: id, In: wire.DiffQuery(in)})
}

// TaskReview implements core.WorkspaceClient.
func (w *Workspaces) TaskReview(ctx context.Context, id string) (core.ReviewView, error) {
	return call(ctx, w.c, wire.TaskReview, wire.Key(id))
}

// PushTask implements core.WorkspaceClient.
func (w *Workspaces) PushTask(ctx context.Context, id string, in core.PushInput) (core.PushResult, error) {
	return call(ctx, w.c, wire.PushTask, wire.Keyed[core.PushInput]{Key: id, In: in})
}

// PullRequestTask implements core.WorkspaceClient.
func (w *Workspaces) PullRequestTask(ctx context.Context, id string, in core.PullRequestInput) (core.PullRequestResult, error) {
	return call(ctx, w.c, wire.PullRequestTask, wire.Keyed[core.PullRequestInput]{Key: id, In: in})
}

// MergeTask implements core.WorkspaceClient.
func (w *Workspaces) MergeTask(ctx context.Context, id string, in core.MergeInput) (core.MergeResult, error) {
	return call(ctx, w.c, wire.MergeTask, wire.Keyed[core.MergeInput]{Key: id, In: in})
}

// DiscardTask implements core.WorkspaceClient.
func (w *Workspaces) DiscardTask(ctx context.Context, id string, in core.DiscardTaskInput) (core.Task, error) {
	return call(ctx, w.c, wire.DiscardTask, wire.WithOptions(id, in))
}

// PruneWorktrees implements core.WorkspaceClient.
func (w *Workspaces) PruneWorktrees(ctx context.Context, in core.PruneInput) (core.PruneResult, error) {
	return call(ctx, w.c, wire.PruneWorktrees, in)
}
