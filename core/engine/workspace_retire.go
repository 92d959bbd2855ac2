package engine

// The end of a task's worktree: Discard removes it with its branch, and
// the archive of a done task retires it (retireWorktree, ADR 0038).

import (
	"context"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/store"
)

// Discard serves api.Client's DiscardTask (wire.DiscardTask): the only way
// a task's worktree and branch are removed (a stop or an archive keeps
// them). The task itself stays, its workspace marked discarded.
func (wo *Workspaces) Discard(ctx context.Context, ref string, _ api.DiscardTaskInput) (core.Task, error) {
	t, wt, err := wo.worktreeTask(ctx, ref, ActDiscard, true)
	if err != nil {
		return core.Task{}, err
	}
	if s := t.Session; s != nil && s.State.Live() {
		return core.Task{}, core.Errorf(core.CodeConflict, "task %s's agent is running in the worktree; stop it (kandev task stop %s) first", t.ID, t.ID)
	}
	for _, c := range wo.inheritors(t) {
		if s := c.Session; s != nil && s.State.Live() {
			return core.Task{}, core.Errorf(core.CodeConflict, "task %s's agent works in this worktree; stop it (kandev task stop %s) first", c.ID, c.ID)
		}
	}
	if err := wo.ws.Discard(ctx, wt); err != nil {
		return core.Task{}, core.Errorf(core.CodeInternal, "%v", err)
	}
	wo.hostWorktreeGone(ctx, t)
	now := time.Now().UTC()
	actor := core.ActorFrom(ctx)
	err = wo.k.commit(ctx, func(tx *store.Tx, ch *changes) error {
		if err := tx.SetWorkspaceMode(ctx, t.ID, core.WorkspaceDiscarded, now); err != nil {
			return err
		}
		for _, c := range wo.inheritors(t) {
			if err := tx.SetWorkspaceMode(ctx, c.ID, core.WorkspaceDiscarded, now); err != nil {
				return err
			}
			ch.touch(c.ID)
		}
		ch.touch(t.ID)
		return ch.noteTx(ctx, tx, t.ID, core.MsgStatus, actor.String(), "discarded worktree "+wt.Dir+" and branch "+wt.Branch+" by "+actor.String(), nil)
	})
	if err != nil {
		return core.Task{}, mapStoreErr(err, "task "+t.ID)
	}
	return wo.task(ctx, t.ID)
}

// retireWorktree applies the archive rule of ADR 0038 to a task just
// archived: a done task's own worktree is removed, its uncommitted work
// first committed on its branch, and the branch kept unless git calls it
// merged. A task not done (cancelled included) keeps its worktree, as a
// stop does, and so does a worktree that a descendant still working in it
// (not done, cancelled or archived) needs. Archiving has happened either
// way: a failure here is noted on the task, never returned.
func (wo *Workspaces) retireWorktree(ctx context.Context, t core.Task) {
	w := t.Workspace
	if t.Status != core.StatusDone || w == nil || w.Mode != core.WorkspaceWorktree || w.Dir == "" {
		return
	}
	inheritors := wo.inheritors(t)
	for _, c := range inheritors {
		if !c.Archived && c.Status != core.StatusDone && c.Status != core.StatusCancelled {
			wo.k.note(ctx, t.ID, "", core.MsgStatus, "kandev", "kept worktree "+w.Dir+": subtask "+c.ID+" still works in it", nil)
			return
		}
	}
	ctx = context.WithoutCancel(ctx) // half a removal helps nobody
	if err := wo.hostFetchBack(ctx, t); err != nil {
		wo.k.note(ctx, t.ID, "", core.MsgStatus, "kandev", "kept worktree "+w.Dir+": fetch it from host "+t.Host+": "+err.Error(), nil)
		return
	}
	r, err := wo.ws.Retire(ctx, worktreeOf(w.Repo, w.Dir, w.Branch, w.Base))
	if err == nil {
		wo.hostWorktreeGone(ctx, t)
	}
	if err != nil {
		wo.k.log.Warn("archive: keep the worktree of a done task", "task", t.ID, "err", err)
		wo.k.note(ctx, t.ID, "", core.MsgStatus, "kandev", "kept worktree "+w.Dir+": "+err.Error(), nil)
		return
	}
	squashed := false
	if !r.BranchDeleted && !r.Committed {
		if rec, ok := wo.lastMerge(ctx, t.ID); ok && rec.Squash && rec.Branch == w.Branch {
			squashed = wo.ws.DeleteBranchAt(ctx, w.Repo, w.Branch, rec.Head)
		}
	}
	what := "removed worktree " + w.Dir + " of the done task; branch " + w.Branch + " kept"
	switch {
	case squashed:
		what = "removed worktree " + w.Dir + " of the done task and its branch " + w.Branch + ", squash-merged by kandev with nothing new since"
	case r.BranchDeleted:
		what = "removed worktree " + w.Dir + " of the done task and its branch " + w.Branch + ", merged"
	case r.Committed:
		what += ", with its uncommitted work committed on it"
	}
	// The task itself is refreshed by the caller, after its own commit.
	now := time.Now().UTC()
	err = wo.k.commit(ctx, func(tx *store.Tx, c *changes) error {
		for _, id := range append([]string{t.ID}, taskIDs(inheritors)...) {
			if err := tx.SetWorkspaceMode(ctx, id, core.WorkspaceRetired, now); err != nil {
				return err
			}
		}
		c.touch(taskIDs(inheritors)...)
		return c.noteTx(ctx, tx, t.ID, core.MsgStatus, "kandev", what, map[string]any{})
	})
	if err != nil {
		// The worktree is gone whether or not its record committed: the
		// note says so all the same, outside the failed transaction.
		wo.k.log.Error("archive: record the removed worktree", "task", t.ID, "err", err)
		wo.k.note(ctx, t.ID, "", core.MsgStatus, "kandev", what, nil)
		for _, c := range inheritors {
			wo.k.refreshQuiet(c.ID)
		}
	}
}
