package engine

// A task's branch merged into the main checkout's (Merge, ADR 0041), and
// the record a merge leaves (lastMerge), by which a squash-merged branch
// is known again.

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/workspace"
)

// Merge serves api.Client's MergeTask (wire.MergeTask). The task's agent
// must not be in a turn: what merges is what its worktree holds at this
// moment.
func (wo *Workspaces) Merge(ctx context.Context, ref string, in api.MergeInput) (api.MergeResult, error) {
	t, wt, err := wo.worktreeTask(ctx, ref, ActMerge, true)
	if err != nil {
		return api.MergeResult{}, err
	}
	for _, c := range append([]core.Task{t}, wo.inheritors(t)...) {
		if s := c.Session; s != nil && (s.State == core.SessionStarting || s.State == core.SessionRunning) {
			return api.MergeResult{}, core.Errorf(core.CodeConflict, "task %s's agent is in a turn in this worktree; wait for it or stop it (kandev task stop %s) first", c.ID, c.ID)
		}
	}
	res, err := wo.ws.Merge(ctx, wt, workspace.MergeOptions{Squash: in.Squash, Message: in.Message})
	if err != nil {
		// Git sees a squash-merged branch as unmerged: a second squash of
		// the same work fails with git's own words. Say what happened.
		if rec, ok := wo.lastMerge(ctx, t.ID); ok && rec.Squash && rec.Branch == wt.Branch {
			if tip, herr := wo.ws.Head(ctx, wt.Dir); herr == nil && tip == rec.Head {
				return api.MergeResult{}, core.Errorf(core.CodeConflict, "task %s's branch %s was squash-merged into %s already (%s) and has nothing new since: nothing to merge",
					t.ID, wt.Branch, rec.Into, shortCommit(rec.Commit))
			}
		}
	}
	switch {
	case errors.Is(err, workspace.ErrRefused), errors.Is(err, workspace.ErrNothingToMerge):
		return api.MergeResult{}, core.Errorf(core.CodeConflict, "%v", err)
	case err != nil:
		return api.MergeResult{}, core.Errorf(core.CodeInternal, "%v", err)
	}
	wo.hostMerged(ctx, t)
	actor := core.ActorFrom(ctx)
	// The record of the merge: the branch's tip that merged, so archiving
	// a done task can delete a branch kandev squash-merged (git does not
	// call it merged) while it has nothing new.
	rec := mergeRecord{Branch: wt.Branch, Into: res.Into, Commit: res.Commit, Squash: in.Squash}
	rec.Head, _ = wo.ws.Head(ctx, wt.Dir)
	how := "merged "
	if in.Squash {
		how = "squash-merged "
	}
	wo.k.note(ctx, t.ID, "", core.MsgStatus, actor.String(),
		how+wt.Branch+" into "+res.Into+" ("+shortCommit(res.Commit)+") by "+actor.String(), map[string]any{"merge": rec})
	t, err = wo.k.refresh(ctx, t.ID)
	if err != nil {
		return api.MergeResult{}, err
	}
	return api.MergeResult{Task: t, Branch: wt.Branch, Into: res.Into, Commit: res.Commit}, nil
}

// mergeRecord is what a merge note's meta keeps under "merge".
type mergeRecord struct {
	Branch string `json:"branch"`
	Into   string `json:"into"`
	Commit string `json:"commit"` // the main checkout's new head
	Head   string `json:"head"`   // the task's branch tip that merged
	Squash bool   `json:"squash"`
}

// lastMerge reads the task's newest merge record.
func (wo *Workspaces) lastMerge(ctx context.Context, taskID string) (mergeRecord, bool) {
	m, err := wo.k.db.LastMessageWithMeta(ctx, taskID, string(core.MsgStatus), "$.merge")
	if err != nil {
		return mergeRecord{}, false
	}
	var meta struct {
		Merge mergeRecord `json:"merge"`
	}
	if json.Unmarshal([]byte(m.Meta), &meta) != nil || meta.Merge.Branch == "" {
		return mergeRecord{}, false
	}
	return meta.Merge, true
}
