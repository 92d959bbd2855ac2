package engine

// What a task changed in its worktree: Diff (api.Client's TaskDiff) and
// get_task_diff_kandev's bounded view of it (toolTaskDiff).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/core/workspace"
)

// Diff serves api.Client's TaskDiff (wire.TaskDiff).
func (wo *Workspaces) Diff(ctx context.Context, ref string, in api.DiffInput) (api.TaskDiff, error) {
	t, wt, err := wo.worktreeTask(ctx, ref, ActDiff, false)
	if err != nil {
		return api.TaskDiff{}, err
	}
	var d workspace.Diff
	if t.Workspace.Mode == core.WorkspaceRetired {
		// Archived done: the worktree is gone, its work committed on the branch.
		d, err = wo.ws.DiffBranch(ctx, wt, in.Patch)
		if errors.Is(err, workspace.ErrNoBranch) {
			return api.TaskDiff{}, core.Errorf(core.CodeValidation, "task %s was archived done and its worktree removed; its branch %s no longer exists (merged, or discarded)", t.ID, wt.Branch)
		}
	} else {
		if _, err := os.Stat(wt.Dir); err != nil {
			return api.TaskDiff{}, core.Errorf(core.CodeNotFound, "task %s's worktree %s is gone: %v", t.ID, wt.Dir, err)
		}
		d, err = wo.ws.Diff(ctx, wt, in.Patch)
	}
	if err != nil {
		return api.TaskDiff{}, core.Errorf(core.CodeInternal, "%v", err)
	}
	out := api.TaskDiff{TaskID: t.ID, Dir: wt.Dir, Branch: wt.Branch, Base: wt.BaseCommit, Stat: d.Stat, Patch: d.Patch,
		Files: make([]api.DiffFileStat, 0, len(d.Files))}
	for _, f := range d.Files {
		out.Files = append(out.Files, api.DiffFileStat(f))
	}
	out.Added, out.Deleted = d.Totals()
	out.PatchBytes = len(out.Patch)
	// Said so that a merge names where it goes; a diff does not fail for it.
	if into, err := wo.ws.CheckedOutBranch(ctx, wt.Repo); err == nil {
		out.Into = into
	} else {
		wo.k.log.Debug("read the main checkout's branch", "task", t.ID, "err", err)
	}
	rv, err := wo.reviewOf(ctx, t)
	if err != nil {
		return api.TaskDiff{}, err
	}
	if len(rv.Comments) > 0 {
		out.Comments = rv.Comments
	}
	if len(out.Patch) > api.MaxPatch {
		out.Patch, out.Truncated = out.Patch[:api.MaxPatch], true
	}
	return out, nil
}

// Bounds of get_task_diff_kandev's result besides the patch's: a change
// of thousands of files must not flood a model's context either.
const (
	maxToolStat  = 16 << 10
	maxToolFiles = 200
)

// toolTaskDiff is get_task_diff_kandev: Diff as the caller (an agent
// may read its own task's diff and those of its subtree, as it may act on
// them: Diff asks may(ActDiff)), bounded for a model's context. A patch
// over capability.MaxToolPatch is cut at a line boundary and ends with a
// marker saying so and where the rest is.
func (wo *Workspaces) toolTaskDiff(ctx context.Context, ref string, statOnly bool) (api.TaskDiff, error) {
	d, err := wo.Diff(ctx, ref, api.DiffInput{Patch: !statOnly})
	if err != nil {
		return api.TaskDiff{}, err
	}
	// The comments' hunks are in the patch already; the latest ones only.
	if n := len(d.Comments); n > capability.MaxReviewComments {
		d.Comments = d.Comments[n-capability.MaxReviewComments:]
	}
	for i := range d.Comments {
		d.Comments[i].Hunk = ""
	}
	if len(d.Files) > maxToolFiles {
		d.FilesTotal = len(d.Files)
		d.Files = d.Files[:maxToolFiles]
	}
	if len(d.Stat) > maxToolStat {
		d.Stat = cutAtLine(d.Stat, maxToolStat) + fmt.Sprintf("[kandev: stat cut; %d files changed, +%d -%d in all]\n", max(d.FilesTotal, len(d.Files)), d.Added, d.Deleted)
		d.Truncated = true
	}
	if d.Patch != "" && (len(d.Patch) > capability.MaxToolPatch || d.PatchBytes > len(d.Patch)) {
		tail := func(shown int) string {
			return fmt.Sprintf("\n[kandev: patch cut at %d of %d bytes; the stat names the files changed; the rest is in %s (git diff %s there, or kandev task diff %s)]\n",
				shown, d.PatchBytes, d.Dir, shortCommit(d.Base), d.TaskID)
		}
		if room := capability.MaxToolPatch - len(tail(d.PatchBytes)); len(d.Patch) > room {
			d.Patch = cutAtLine(d.Patch, room)
		}
		d.Patch += tail(len(d.Patch))
		d.Truncated = true
	}
	return d, nil
}

// cutAtLine returns the longest prefix of s of at most n bytes that ends
// at a line break, or, for a line longer than n, at a character boundary.
func cutAtLine(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if i := strings.LastIndexByte(s[:n], '\n'); i >= 0 {
		return s[:i+1]
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
