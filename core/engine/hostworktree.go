package engine

// The worktree of a task on a host, at the ends of its life here: a merge
// in the main checkout is pushed back to the host, and once the local
// worktree is removed (discard, archive of a done task) the host's goes
// too (docs/hosts.md, "What travels where").

import (
	"context"

	"github.com/kandev/kandev/core"
)

// hostMerged moves the host's branch onto what the merge committed in the
// local worktree, so the task's next run there, its next diff and merge
// do not show the merged work as new. A failure is noted, not returned:
// the merge happened.
func (ho *Hosts) hostMerged(ctx context.Context, t core.Task) {
	if t.Host == "" || t.Host == hostAuto { // auto: never placed, never ran on a host
		return
	}
	r, err := ho.remoteFor(ctx, t)
	if err == nil {
		err = r.PushBack(ctx)
	}
	if err != nil {
		ho.k.log.Warn("merge: update the branch on the host", "task", t.ID, "host", t.Host, "err", err)
		ho.k.note(ctx, t.ID, "", core.MsgStatus, "kandev", "merged here, but the worktree on host "+t.Host+" was not moved onto the merged commit: "+err.Error(), nil)
	}
}

// hostFetchBack brings a host task's worktree into the local one before
// the local one is committed and removed (the archive of a done task).
func (ho *Hosts) hostFetchBack(ctx context.Context, t core.Task) error {
	if t.Host == "" || t.Host == hostAuto { // auto: never placed, never ran on a host
		return nil
	}
	r, err := ho.remoteFor(ctx, t)
	if err != nil {
		return err
	}
	return r.FetchBack(ctx)
}

// hostWorktreeGone removes the host's copy of a worktree removed here.
// A failure is noted: the local removal stands.
func (ho *Hosts) hostWorktreeGone(ctx context.Context, t core.Task) {
	if t.Host == "" || t.Host == hostAuto { // auto: never placed, never ran on a host
		return
	}
	r, err := ho.remoteFor(ctx, t)
	if err == nil {
		err = r.RemoveWorktree(ctx)
	}
	if err != nil {
		ho.k.log.Warn("remove the worktree on the host", "task", t.ID, "host", t.Host, "err", err)
		ho.k.note(ctx, t.ID, "", core.MsgStatus, "kandev", "the worktree on host "+t.Host+" was left: "+err.Error(), nil)
	}
}
