package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/core/hosts"
	"github.com/kandev/kandev/core/workspace"
	"github.com/kandev/kandev/store"
)

// Workspaces is the engine's workspaces area (ADR 0027, docs/workspaces.md):
// a task's worktree from its create (planWorkspace, makeWorktree) to its
// end (Discard; retireWorktree when a done task is archived; Prune for the
// ones no task owns), and what is done with the work in it: core.Client's
// workspace operations, which the daemon routes here (Diff, Review in
// review.go, Merge, Push, PullRequest, Discard, Prune), the agents' diff,
// pull request and review tools, the review comments a message carries
// (planReview), a confined task's commits brought in (importWork) and the
// worktree's .kandev/setup (setupWorktree). Its fields are all it may
// touch: the kernel, its own state, and what other areas give it, each
// named.
//
// Lock: wsMu is its own. A create holds it shared from its worktree to its
// row (Engine.commitCreate, through createBegin and createEnd), a prune
// exclusively (Prune), so a worktree about to get its task is never taken
// for an orphan. No task's rt.mu is held when it is taken (neither a create
// nor a prune takes one); held, it comes before the task cache's lock
// (ownedWorktrees), the store's transactions (the create's row) and
// core/workspace's own locks.
type Workspaces struct {
	k *kernel
	// ws does the git work (core/workspace); the hosts area is given it too
	// (hostSetup).
	ws *workspace.Manager
	// wsMu: creates hold it shared from their worktree to their row, a
	// worktree prune exclusively.
	wsMu sync.RWMutex

	// What the areas still on Engine give it (set by New):
	// task resolves a task's id or prefix (engine.go).
	task func(ctx context.Context, ref string) (core.Task, error)
	// may is the authorizer (authorize.go): who diffs, reviews, merges,
	// pushes, discards and prunes.
	may func(a core.Actor, act Action, t core.Task) error
	// describeSender names a review's author in the agent's notice
	// (render.go).
	describeSender func(sender string) string
	// setupConfiner runs a confined task's .kandev/setup in its sandbox
	// (sandbox.go).
	setupConfiner func(t core.Task, prof core.Profile, sessionID string) workspace.Confiner

	// What the hosts area gives it (hosts.go, hostworktree.go), for a task
	// on a host: its worktree fetched back before a diff, merge or discard
	// (remoteFor) and before a retire (hostFetchBack), a merge pushed back
	// (hostMerged), the host's copy removed with the local one
	// (hostWorktreeGone).
	remoteFor        func(ctx context.Context, t core.Task) (*hosts.Remote, error)
	hostFetchBack    func(ctx context.Context, t core.Task) error
	hostMerged       func(ctx context.Context, t core.Task)
	hostWorktreeGone func(ctx context.Context, t core.Task)
}

// newWorkspaces builds the workspaces area over the kernel, with its
// manager.
func newWorkspaces(k *kernel) *Workspaces {
	wo := &Workspaces{k: k, ws: &workspace.Manager{}}
	if k.opts.Home.Dir != "" {
		// Confined worktrees' own git state (ADR 0065).
		wo.ws.Quarantine = filepath.Join(k.opts.Home.Dir, "sandboxes", "git")
	}
	return wo
}

// createBegin and createEnd hold the worktrees shared for a create, from
// its worktree to its row (Engine.commitCreate): a prune waits for it.
func (wo *Workspaces) createBegin() { wo.wsMu.RLock() }
func (wo *Workspaces) createEnd()   { wo.wsMu.RUnlock() }

// Engine's core.Client methods of the workspaces area, forwarded to it
// until core.Client is split by area (issue 35); the daemon routes their
// rows to Workspaces directly.

// TaskDiff implements core.Client (Workspaces.Diff).
func (e *Engine) TaskDiff(ctx context.Context, ref string, in core.DiffInput) (core.TaskDiff, error) {
	return e.Workspaces.Diff(ctx, ref, in)
}

// TaskReview implements core.Client (Workspaces.Review).
func (e *Engine) TaskReview(ctx context.Context, ref string) (core.ReviewView, error) {
	return e.Workspaces.Review(ctx, ref)
}

// MergeTask implements core.Client (Workspaces.Merge).
func (e *Engine) MergeTask(ctx context.Context, ref string, in core.MergeInput) (core.MergeResult, error) {
	return e.Workspaces.Merge(ctx, ref, in)
}

// PushTask implements core.Client (Workspaces.Push).
func (e *Engine) PushTask(ctx context.Context, ref string, in core.PushInput) (core.PushResult, error) {
	return e.Workspaces.Push(ctx, ref, in)
}

// PullRequestTask implements core.Client (Workspaces.PullRequest).
func (e *Engine) PullRequestTask(ctx context.Context, ref string, in core.PullRequestInput) (core.PullRequestResult, error) {
	return e.Workspaces.PullRequest(ctx, ref, in)
}

// DiscardTask implements core.Client (Workspaces.Discard).
func (e *Engine) DiscardTask(ctx context.Context, ref string) (core.Task, error) {
	return e.Workspaces.Discard(ctx, ref)
}

// PruneWorktrees implements core.Client (Workspaces.Prune).
func (e *Engine) PruneWorktrees(ctx context.Context, in core.PruneInput) (core.PruneResult, error) {
	return e.Workspaces.Prune(ctx, in)
}

// wsPlan is the workspace a new task gets, decided before its row exists.
type wsPlan struct {
	mode   string
	repo   string
	prefix string // cwd relative to its repository's top, "" at the top
	base   string // the ref to branch from ("" = the main checkout's HEAD)
	branch string // "" = workspace.DefaultBranch
	// inherited from the parent
	dir, baseCommit string
	// parent is the parent's worktree, whose confined agent's commits are
	// brought in (checked) before a worktree starts from them.
	parent workspace.Worktree
}

// planWorkspace decides where a new task works (ADR 0027). With no mode
// given: a child created without a directory works in its parent's
// worktree; a task given a directory inside a git repository gets a
// worktree of its own; anything else runs in its directory as it is. The
// daemon's own directory (no directory given, no parent) never gets a
// worktree: it is not a place the user chose.
func (wo *Workspaces) planWorkspace(ctx context.Context, in core.CreateTaskInput, parent core.Task, cwd string) (wsPlan, error) {
	mode := strings.TrimSpace(in.Workspace)
	if mode == "new" {
		mode = core.WorkspaceWorktree
	}
	pw := parent.Workspace
	parentHasTree := pw != nil && (pw.Mode == core.WorkspaceWorktree || pw.Mode == core.WorkspaceInherit)
	switch mode {
	case "":
		switch {
		case parentHasTree && in.CWD == "":
			mode = core.WorkspaceInherit
		case in.CWD != "" && wo.k.opts.Home.Dir != "":
			mode = "auto"
		default:
			mode = core.WorkspaceShared
		}
	case core.WorkspaceWorktree, core.WorkspaceShared:
	case core.WorkspaceInherit:
		if parent.ID == "" {
			return wsPlan{}, core.Errorf(core.CodeValidation, "workspace inherit needs a parent task")
		}
		if !parentHasTree {
			// A parent without a worktree shares its directory: so does the child.
			mode = core.WorkspaceShared
		}
	default:
		return wsPlan{}, core.Errorf(core.CodeValidation, "workspace %q: use worktree (or new), shared or inherit", in.Workspace)
	}
	if (in.Base != "" || in.Branch != "") && (mode == core.WorkspaceShared || mode == core.WorkspaceInherit) {
		return wsPlan{}, core.Errorf(core.CodeValidation, "a base or branch needs a worktree of the task's own (workspace worktree or new), not %s", mode)
	}
	switch mode {
	case core.WorkspaceShared:
		return wsPlan{mode: mode}, nil
	case core.WorkspaceInherit:
		return wsPlan{mode: mode, repo: pw.Repo, dir: pw.Dir, branch: pw.Branch, baseCommit: pw.Base}, nil
	}
	if wo.k.opts.Home.Dir == "" {
		return wsPlan{}, core.Errorf(core.CodeInternal, "no kandev home to keep worktrees in")
	}
	repo, prefix, err := wo.ws.Locate(ctx, cwd)
	if errors.Is(err, workspace.ErrNotRepo) || errors.Is(err, workspace.ErrNoGit) {
		if mode == "auto" {
			return wsPlan{mode: core.WorkspaceShared}, nil
		}
		return wsPlan{}, core.Errorf(core.CodeValidation, "workspace worktree: %v", err)
	}
	if err != nil {
		return wsPlan{}, core.Errorf(core.CodeInternal, "workspace: %v", err)
	}
	p := wsPlan{mode: core.WorkspaceWorktree, repo: repo, prefix: prefix, base: in.Base, branch: strings.TrimSpace(in.Branch)}
	if parentHasTree && pw.Repo == repo {
		p.parent = worktreeOf(pw.Repo, pw.Dir, pw.Branch, pw.Base)
		if p.base == "" {
			p.base = pw.Branch // a new worktree of a child starts from its parent's work
		}
	}
	return p, nil
}

// makeWorktree creates the worktree of a task about to be inserted and
// fills the row's workspace fields; the agent's directory is the same
// place inside the worktree as the one the task was created in.
func (wo *Workspaces) makeWorktree(ctx context.Context, p wsPlan, row *store.Task) error {
	row.Workspace = p.mode
	switch p.mode {
	case core.WorkspaceShared:
		return nil
	case core.WorkspaceInherit:
		row.RepoRoot, row.WorktreeDir, row.Branch, row.BaseCommit = p.repo, p.dir, p.branch, p.baseCommit
		return nil
	}
	branch := p.branch
	if branch == "" {
		branch = workspace.DefaultBranch(row.ID, row.Title)
	}
	// Resolved before it exists (ADR 0042): a worktrees directory that is
	// a link to another disk is recorded as the place it is.
	dir, err := core.RealPath(workspace.Dir(wo.k.opts.Home.Dir, p.repo, row.ID))
	if err != nil {
		return core.Errorf(core.CodeInternal, "worktree directory: %v", err)
	}
	if p.parent.Dir != "" {
		// The parent's commits reach the child only checked (ADR 0065).
		if err := wo.ws.Import(ctx, p.parent); err != nil {
			return core.Errorf(core.CodeValidation, "%v", err)
		}
	}
	wt, err := wo.ws.Create(ctx, workspace.CreateOptions{
		Repo: p.repo, Dir: dir, Branch: branch, Base: p.base})
	if err != nil {
		return core.Errorf(core.CodeValidation, "%v", err)
	}
	row.RepoRoot, row.WorktreeDir, row.Branch, row.BaseCommit = wt.Repo, wt.Dir, wt.Branch, wt.BaseCommit
	row.CWD = wt.Dir
	if p.prefix != "" {
		// The agent works in the same place inside the worktree. A
		// directory not in the branch yet (untracked, or holding only
		// untracked files) is made there, empty: the top would be a
		// different place than the one the task was created in.
		sub := filepath.Join(wt.Dir, p.prefix)
		if err := os.MkdirAll(sub, 0o755); err == nil {
			row.CWD = sub
		} else {
			wo.k.log.Warn("worktree subdirectory", "dir", sub, "err", err)
		}
	}
	return nil
}

// dropWorktree undoes makeWorktree for a row that was never inserted.
func (wo *Workspaces) dropWorktree(ctx context.Context, row store.Task) {
	if row.Workspace != core.WorkspaceWorktree || row.WorktreeDir == "" {
		return
	}
	if err := wo.ws.Discard(context.WithoutCancel(ctx), worktreeOf(row.RepoRoot, row.WorktreeDir, row.Branch, row.BaseCommit)); err != nil {
		wo.k.log.Warn("remove the worktree of a task that was not created", "dir", row.WorktreeDir, "err", err)
	}
}

func worktreeOf(repo, dir, branch, base string) workspace.Worktree {
	return workspace.Worktree{Repo: repo, Dir: dir, Branch: branch, BaseCommit: base}
}

func workspaceOf(t store.Task) *core.Workspace {
	mode := t.Workspace
	if mode == "" {
		mode = core.WorkspaceShared
	}
	return &core.Workspace{Mode: mode, Repo: t.RepoRoot, Dir: t.WorktreeDir, Branch: t.Branch, Base: t.BaseCommit}
}

// worktreeTask returns the task and its worktree for diff, merge or
// discard; own says the task must own it (not work in its parent's).
func (wo *Workspaces) worktreeTask(ctx context.Context, ref string, verb Action, own bool) (core.Task, workspace.Worktree, error) {
	t, err := wo.task(ctx, ref)
	if err != nil {
		return core.Task{}, workspace.Worktree{}, err
	}
	if err := wo.may(core.ActorFrom(ctx), verb, t); err != nil {
		return core.Task{}, workspace.Worktree{}, err
	}
	w := t.Workspace
	switch {
	case w == nil || w.Mode == core.WorkspaceShared:
		return t, workspace.Worktree{}, core.Errorf(core.CodeValidation, "task %s runs in a shared directory, not a worktree of its own: there is nothing to %s", t.ID, verb)
	case w.Mode == core.WorkspaceDiscarded:
		return t, workspace.Worktree{}, core.Errorf(core.CodeValidation, "task %s's worktree was discarded", t.ID)
	case w.Mode == core.WorkspaceRetired && own && wo.sharesParentWorktree(t):
		return t, workspace.Worktree{}, core.Errorf(core.CodeValidation, "task %s worked in its parent's worktree (branch %s): %s the task that owns it", t.ID, w.Branch, verb)
	case w.Mode == core.WorkspaceRetired && verb == ActMerge:
		return t, workspace.Worktree{}, core.Errorf(core.CodeValidation, "task %s was archived done and its worktree removed; its work is on branch %s: merge it with git (git merge %s in %s)",
			t.ID, w.Branch, w.Branch, w.Repo)
	case w.Mode == core.WorkspaceInherit && own:
		return t, workspace.Worktree{}, core.Errorf(core.CodeValidation, "task %s works in its parent's worktree (branch %s): %s the task that owns it", t.ID, w.Branch, verb)
	}
	if t.Host != "" && t.Host != hostAuto && w.Mode != core.WorkspaceRetired {
		// The work is on the host: bring it into the local worktree
		// first, so review and merge happen here as for a local task.
		r, err := wo.remoteFor(ctx, t)
		if err == nil {
			err = r.FetchBack(ctx)
		}
		if err != nil {
			return t, workspace.Worktree{}, core.Errorf(core.CodeUnavailable, "task %s: fetch its worktree from host %s: %v", t.ID, t.Host, err)
		}
	}
	return t, worktreeOf(w.Repo, w.Dir, w.Branch, w.Base), nil
}

// Diff serves core.Client's TaskDiff (wire.TaskDiff).
func (wo *Workspaces) Diff(ctx context.Context, ref string, in core.DiffInput) (core.TaskDiff, error) {
	t, wt, err := wo.worktreeTask(ctx, ref, ActDiff, false)
	if err != nil {
		return core.TaskDiff{}, err
	}
	var d workspace.Diff
	if t.Workspace.Mode == core.WorkspaceRetired {
		// Archived done: the worktree is gone, its work committed on the branch.
		d, err = wo.ws.DiffBranch(ctx, wt, in.Patch)
		if errors.Is(err, workspace.ErrNoBranch) {
			return core.TaskDiff{}, core.Errorf(core.CodeValidation, "task %s was archived done and its worktree removed; its branch %s no longer exists (merged, or discarded)", t.ID, wt.Branch)
		}
	} else {
		if _, err := os.Stat(wt.Dir); err != nil {
			return core.TaskDiff{}, core.Errorf(core.CodeNotFound, "task %s's worktree %s is gone: %v", t.ID, wt.Dir, err)
		}
		d, err = wo.ws.Diff(ctx, wt, in.Patch)
	}
	if err != nil {
		return core.TaskDiff{}, core.Errorf(core.CodeInternal, "%v", err)
	}
	out := core.TaskDiff{TaskID: t.ID, Dir: wt.Dir, Branch: wt.Branch, Base: wt.BaseCommit, Stat: d.Stat, Patch: d.Patch,
		Files: make([]core.DiffFileStat, 0, len(d.Files))}
	for _, f := range d.Files {
		out.Files = append(out.Files, core.DiffFileStat(f))
	}
	out.Added, out.Deleted = d.Totals()
	out.PatchBytes = len(out.Patch)
	rv, err := wo.reviewOf(ctx, t)
	if err != nil {
		return core.TaskDiff{}, err
	}
	if len(rv.Comments) > 0 {
		out.Comments = rv.Comments
	}
	if len(out.Patch) > core.MaxPatch {
		out.Patch, out.Truncated = out.Patch[:core.MaxPatch], true
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
func (wo *Workspaces) toolTaskDiff(ctx context.Context, ref string, statOnly bool) (core.TaskDiff, error) {
	d, err := wo.Diff(ctx, ref, core.DiffInput{Patch: !statOnly})
	if err != nil {
		return core.TaskDiff{}, err
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

// Merge serves core.Client's MergeTask (wire.MergeTask). The task's agent
// must not be in a turn: what merges is what its worktree holds at this
// moment.
func (wo *Workspaces) Merge(ctx context.Context, ref string, in core.MergeInput) (core.MergeResult, error) {
	t, wt, err := wo.worktreeTask(ctx, ref, ActMerge, true)
	if err != nil {
		return core.MergeResult{}, err
	}
	for _, c := range append([]core.Task{t}, wo.inheritors(t)...) {
		if s := c.Session; s != nil && (s.State == core.SessionStarting || s.State == core.SessionRunning) {
			return core.MergeResult{}, core.Errorf(core.CodeConflict, "task %s's agent is in a turn in this worktree; wait for it or stop it (kandev task stop %s) first", c.ID, c.ID)
		}
	}
	res, err := wo.ws.Merge(ctx, wt, workspace.MergeOptions{Squash: in.Squash, Message: in.Message})
	if err != nil {
		// Git sees a squash-merged branch as unmerged: a second squash of
		// the same work fails with git's own words. Say what happened.
		if rec, ok := wo.lastMerge(ctx, t.ID); ok && rec.Squash && rec.Branch == wt.Branch {
			if tip, herr := wo.ws.Head(ctx, wt.Dir); herr == nil && tip == rec.Head {
				return core.MergeResult{}, core.Errorf(core.CodeConflict, "task %s's branch %s was squash-merged into %s already (%s) and has nothing new since: nothing to merge",
					t.ID, wt.Branch, rec.Into, shortCommit(rec.Commit))
			}
		}
	}
	switch {
	case errors.Is(err, workspace.ErrRefused), errors.Is(err, workspace.ErrNothingToMerge):
		return core.MergeResult{}, core.Errorf(core.CodeConflict, "%v", err)
	case err != nil:
		return core.MergeResult{}, core.Errorf(core.CodeInternal, "%v", err)
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
		return core.MergeResult{}, err
	}
	return core.MergeResult{Task: t, Branch: wt.Branch, Into: res.Into, Commit: res.Commit}, nil
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

// Push serves core.Client's PushTask (wire.PushTask): the task's branch to
// a remote of its repository, its uncommitted work committed first with a
// message naming the task. Only a person pushes: it reaches past this
// machine. Like a merge, it waits for no turn: an agent in a turn in the
// worktree refuses it.
func (wo *Workspaces) Push(ctx context.Context, ref string, in core.PushInput) (core.PushResult, error) {
	res, _, err := wo.push(ctx, ref, in.Remote)
	if err != nil {
		return core.PushResult{}, pushErr(err)
	}
	return res, nil
}

// push is Push with workspace's errors as they are (a pull request
// goes on from a remote that is up to date), and the task's worktree.
func (wo *Workspaces) push(ctx context.Context, ref, remote string) (core.PushResult, workspace.Worktree, error) {
	actor := core.ActorFrom(ctx)
	t, wt, err := wo.worktreeTask(ctx, ref, ActPush, true)
	if err != nil {
		return core.PushResult{}, wt, err
	}
	own := agentOf(actor, t.ID) // else a person (worktreeTask asked may(ActPush))
	gone := t.Workspace.Mode == core.WorkspaceRetired
	if !gone {
		for _, c := range append([]core.Task{t}, wo.inheritors(t)...) {
			if own && c.ID == t.ID {
				continue // the agent calling is that turn
			}
			if s := c.Session; s != nil && (s.State == core.SessionStarting || s.State == core.SessionRunning) {
				return core.PushResult{}, wt, core.Errorf(core.CodeConflict, "task %s's agent is in a turn in this worktree; wait for it or stop it (kandev task stop %s) first", c.ID, c.ID)
			}
		}
		if _, err := os.Stat(wt.Dir); err != nil {
			return core.PushResult{}, wt, core.Errorf(core.CodeNotFound, "task %s's worktree %s is gone: %v", t.ID, wt.Dir, err)
		}
	}
	res, err := wo.ws.Push(ctx, wt, workspace.PushOptions{Remote: remote, Gone: gone,
		Message: fmt.Sprintf("kandev: task %s: %s", t.ID, oneLineTitle(t.Title))})
	out := core.PushResult{Task: t, Branch: wt.Branch, Remote: res.Remote, Commit: res.Commit, Committed: res.Committed}
	if err != nil {
		return out, wt, err
	}
	what := "pushed " + wt.Branch + " to " + res.Remote + " (" + shortCommit(res.Commit) + ") by " + actor.String()
	if res.Committed {
		what += ", its uncommitted work committed first"
	}
	wo.k.note(ctx, t.ID, "", core.MsgStatus, actor.String(), what, nil)
	if out.Task, err = wo.k.refresh(ctx, t.ID); err != nil {
		return out, wt, err
	}
	return out, wt, nil
}

// pushErr maps a push's workspace errors to the client's codes.
func pushErr(err error) error {
	var ce *core.Error
	switch {
	case errors.As(err, &ce):
		return err
	case errors.Is(err, workspace.ErrRefused), errors.Is(err, workspace.ErrNothingToPush):
		return core.Errorf(core.CodeConflict, "%v", err)
	}
	return core.Errorf(core.CodeInternal, "%v", err)
}

// linkPullRequest is the task_links kind of a task's pull request URL.
const linkPullRequest = "pull_request"

// PullRequest serves core.Client's PullRequestTask (wire.PullRequestTask):
// push the task's branch, then open a pull request for it with gh (title
// from the task, body from its last handoff and its diff's stat), and
// record its URL on the task. A repository whose origin is on GitLab gets a
// merge request (glab).
func (wo *Workspaces) PullRequest(ctx context.Context, ref string, in core.PullRequestInput) (core.PullRequestResult, error) {
	host := ""
	if t, err := wo.task(ctx, ref); err == nil && t.Workspace != nil && in.Remote == "" {
		host = wo.ws.RemoteHost(ctx, t.Workspace.Repo, "")
	}
	return wo.openRequest(ctx, ref, in, host)
}

// openRequest pushes and opens the pull request (or, for host gitlab,
// the merge request).
func (wo *Workspaces) openRequest(ctx context.Context, ref string, in core.PullRequestInput, host string) (core.PullRequestResult, error) {
	pushed, wt, err := wo.push(ctx, ref, in.Remote)
	if err != nil && !errors.Is(err, workspace.ErrUpToDate) {
		return core.PullRequestResult{}, pushErr(err)
	}
	t := pushed.Task
	body := wo.pullRequestBody(ctx, t)
	open := workspace.OpenPullRequest
	if host == workspace.HostGitLab {
		open = workspace.OpenMergeRequest
	}
	u, err := open(ctx, wt.Repo, workspace.PullRequestOptions{Head: wt.Branch, Base: strings.TrimSpace(in.Base),
		Title: oneLineTitle(t.Title), Body: body, Draft: in.Draft})
	switch {
	case errors.Is(err, workspace.ErrNoHostCLI):
		return core.PullRequestResult{}, core.Errorf(core.CodeUnavailable, "%v (the branch %s was pushed to %s)", err, wt.Branch, pushed.Remote)
	case err != nil:
		return core.PullRequestResult{}, core.Errorf(core.CodeConflict, "%v (the branch %s was pushed to %s)", err, wt.Branch, pushed.Remote)
	}
	actor := core.ActorFrom(ctx)
	now := time.Now().UTC()
	err = wo.k.commit(ctx, func(tx *store.Tx, ch *changes) error {
		if err := tx.SetTaskLink(ctx, t.ID, linkPullRequest, u, now); err != nil {
			return err
		}
		ch.touch(t.ID)
		return ch.noteTx(ctx, tx, t.ID, core.MsgStatus, actor.String(), "opened pull request "+u+" for "+wt.Branch+" by "+actor.String(), map[string]any{})
	})
	if err != nil {
		return core.PullRequestResult{}, core.Errorf(core.CodeInternal, "pull request %s opened, but not recorded on task %s: %v", u, t.ID, err)
	}
	t, _ = wo.k.cached(t.ID) // refreshed by the commit, its URL in its view
	return core.PullRequestResult{Task: t, URL: u, Push: pushed}, nil
}

// providerHost is the git host the provider group has tools for, of
// the task's repository's origin: GitHub, or GitLab when glab is on PATH;
// "" otherwise (no worktree, no origin, another host).
func (wo *Workspaces) providerHost(t core.Task) string {
	w := t.Workspace
	if w == nil || w.Repo == "" || (w.Mode != core.WorkspaceWorktree && w.Mode != core.WorkspaceInherit) {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	switch wo.ws.RemoteHost(ctx, w.Repo, "") {
	case workspace.HostGitHub:
		return capability.HostGitHub
	case workspace.HostGitLab:
		if _, err := exec.LookPath("glab"); err == nil {
			return capability.HostGitLab
		}
	}
	return ""
}

// RequestReview is what get_pull_request_comments_kandev and
// get_merge_request_comments_kandev return: the host's own JSON (GitHub)
// or text (GitLab), bounded.
type RequestReview struct {
	TaskID string          `json:"task_id"`
	Branch string          `json:"branch"`
	URL    string          `json:"url,omitempty"`
	View   json.RawMessage `json:"pull_request,omitempty"`  // gh pr view --json
	Inline json.RawMessage `json:"line_comments,omitempty"` // the comments on lines of the diff
	Text   string          `json:"text,omitempty"`          // glab mr view --comments
}

// requestReview reads the review of the caller's own task's pull (or
// merge) request.
func (wo *Workspaces) requestReview(ctx context.Context, actor core.Actor, host string) (RequestReview, error) {
	t, wt, err := wo.worktreeTask(ctx, actor.TaskID, ActRequestReview, false)
	if err != nil {
		return RequestReview{}, err
	}
	out := RequestReview{TaskID: t.ID, Branch: wt.Branch}
	if t.Workspace != nil {
		out.URL = t.Workspace.PullRequest
	}
	if host == capability.HostGitLab {
		out.Text, err = workspace.MergeRequestReview(ctx, wt.Repo, wt.Branch)
	} else {
		out.View, out.Inline, err = workspace.PullRequestReview(ctx, wt.Repo, wt.Branch)
	}
	switch {
	case errors.Is(err, workspace.ErrNoHostCLI):
		return RequestReview{}, core.Errorf(core.CodeUnavailable, "%v", err)
	case errors.Is(err, workspace.ErrNoRequest):
		return RequestReview{}, core.Errorf(core.CodeNotFound, "%v; open it with the open tool first", err)
	case err != nil:
		return RequestReview{}, core.Errorf(core.CodeConflict, "%v", err)
	}
	return out, nil
}

// pullRequestBody is the task's last handoff message (what its agent said
// it did) and the stat of its diff.
func (wo *Workspaces) pullRequestBody(ctx context.Context, t core.Task) string {
	var b strings.Builder
	if m, err := wo.k.db.LastMessageOfKind(ctx, t.ID, string(core.MsgHandoff)); err == nil && strings.TrimSpace(m.Text) != "" {
		b.WriteString(strings.TrimSpace(m.Text))
		b.WriteString("\n\n")
	} else if d := strings.TrimSpace(t.Description); d != "" {
		b.WriteString(d)
		b.WriteString("\n\n")
	}
	if d, err := wo.Diff(ctx, t.ID, core.DiffInput{}); err == nil && d.Stat != "" {
		b.WriteString("```\n")
		b.WriteString(cutAtLine(d.Stat, 8<<10))
		b.WriteString("```\n\n")
	}
	fmt.Fprintf(&b, "Opened by kandev from task %s.\n", t.ID)
	return b.String()
}

// oneLineTitle is a title fit for a commit's subject line.
func oneLineTitle(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 72 {
		s = cutAtLine(s, 72)
	}
	return s
}

// Discard serves core.Client's DiscardTask (wire.DiscardTask): the only way
// a task's worktree and branch are removed (a stop or an archive keeps
// them). The task itself stays, its workspace marked discarded.
func (wo *Workspaces) Discard(ctx context.Context, ref string) (core.Task, error) {
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

// sharesParentWorktree reports whether t worked in its parent's worktree
// (a retired inheritor keeps its parent's directory and branch).
func (wo *Workspaces) sharesParentWorktree(t core.Task) bool {
	p, ok := wo.k.cached(t.ParentID)
	return ok && t.ParentID != "" && p.Workspace != nil && t.Workspace != nil && p.Workspace.Dir == t.Workspace.Dir
}

func taskIDs(ts []core.Task) []string {
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	return ids
}

// worktreeOwner is the task whose worktree t works in, when t works in an
// ancestor's (workspace inherit).
func (wo *Workspaces) worktreeOwner(t core.Task) (core.Task, bool) {
	w := t.Workspace
	if w == nil || w.Mode != core.WorkspaceInherit || w.Dir == "" {
		return core.Task{}, false
	}
	p := t
	for p.Workspace != nil && p.Workspace.Mode == core.WorkspaceInherit && p.ParentID != "" {
		next, ok := wo.k.cached(p.ParentID)
		if !ok {
			return core.Task{}, false
		}
		p = next
	}
	if p.ID == t.ID || p.Workspace == nil || p.Workspace.Dir != w.Dir {
		return core.Task{}, false
	}
	return p, true
}

// inheritors are the descendants of t that work in its worktree.
func (wo *Workspaces) inheritors(t core.Task) []core.Task {
	var out []core.Task
	cv := wo.k.cache.rlock()
	defer cv.runlock()
	queue := append([]string(nil), cv.children[t.ID]...)
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		c := cv.tasks[id]
		if c == nil || c.Workspace == nil || c.Workspace.Mode != core.WorkspaceInherit || c.Workspace.Dir != t.Workspace.Dir {
			continue
		}
		out = append(out, *c)
		queue = append(queue, cv.children[id]...)
	}
	return out
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// importWork brings what a confined task's agent committed in its
// sandbox into the repository, checked (ADR 0065), when its turn ends: so
// the operator's own git shows the branch as the agent left it. A refusal
// is said in the task's conversation; diff and merge say it again.
func (wo *Workspaces) importWork(ctx context.Context, taskID, sessionID string) {
	t, ok := wo.k.cached(taskID)
	if !ok || t.Host != "" || core.SandboxRank(t.Sandbox) <= 0 {
		return
	}
	w := t.Workspace
	if w == nil || w.Dir == "" || (w.Mode != core.WorkspaceWorktree && w.Mode != core.WorkspaceInherit) {
		return
	}
	if err := wo.ws.Import(ctx, worktreeOf(w.Repo, w.Dir, w.Branch, w.Base)); err != nil {
		wo.k.log.Warn("bring a confined task's commits in", "task", taskID, "err", err)
		wo.k.note(ctx, taskID, sessionID, core.MsgStatus, "kandev", err.Error(), nil)
	}
}

// setupWorktree runs the .kandev/setup of the worktree the task works in
// (its own or its parent's), once per worktree.
func (wo *Workspaces) setupWorktree(ctx context.Context, t core.Task, p *launchPlan) (string, error) {
	w := t.Workspace
	if w == nil || (w.Mode != core.WorkspaceWorktree && w.Mode != core.WorkspaceInherit) || w.Dir == "" {
		return "", nil
	}
	return wo.ws.RunSetup(ctx, worktreeOf(w.Repo, w.Dir, w.Branch, w.Base), wo.setupConfiner(t, p.prof, p.sessionID))
}

// Prune serves core.Client's PruneWorktrees (wire.PruneWorktrees): it
// removes the directories under $KANDEV_HOME/worktrees that it can prove no
// task owns (a create cut between its worktree and its row, a discard
// interrupted), with their kandev/<id> branches. Other branches are left.
// It refuses outright when the store records a worktree outside this home's
// worktrees directory (the home moved, or was restored elsewhere): then
// every directory here may be some task's. It keeps, unless in.Force names
// them, a worktree with uncommitted changes or commits no branch has, a
// branch with commits no other branch has, and a directory that is not a
// worktree (ADR 0042). Creates wait while it runs, so a worktree about to
// get its task is never taken for an orphan.
func (wo *Workspaces) Prune(ctx context.Context, in core.PruneInput) (core.PruneResult, error) {
	if err := wo.may(core.ActorFrom(ctx), ActPrune, core.Task{}); err != nil {
		return core.PruneResult{}, err
	}
	wo.wsMu.Lock()
	defer wo.wsMu.Unlock()
	res := core.PruneResult{Removed: []string{}, Branches: []string{}, Entries: []core.PruneEntry{}}
	root, err := core.RealPath(filepath.Join(wo.k.opts.Home.Dir, "worktrees"))
	if err != nil {
		return res, core.Errorf(core.CodeInternal, "prune: %v", err)
	}
	owned, known, err := wo.ownedWorktrees(root)
	if err != nil {
		return res, err
	}
	repos, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		if len(in.Force) > 0 {
			return res, core.Errorf(core.CodeValidation, "--force %s: there is nothing to prune", in.Force[0])
		}
		return res, nil
	}
	if err != nil {
		return res, core.Errorf(core.CodeInternal, "prune: %v", err)
	}
	var plan []pruneItem
	for _, r := range repos {
		if !r.IsDir() {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(root, r.Name()))
		if err != nil {
			return res, core.Errorf(core.CodeInternal, "prune: %v", err)
		}
		for _, ent := range entries {
			dir := filepath.Join(root, r.Name(), ent.Name())
			if owned[dir] {
				continue
			}
			it, err := wo.planPrune(ctx, ent.Name(), dir, known)
			if err != nil {
				return res, err
			}
			plan = append(plan, it)
		}
	}
	// Every --force name must be something this prune would otherwise
	// keep: a mistyped one must not pass for consent.
	forced := map[string]bool{}
	for _, f := range in.Force {
		name := strings.TrimSpace(f)
		if real, err := core.RealPath(name); err == nil && filepath.IsAbs(name) {
			name = real
		}
		found := false
		for _, it := range plan {
			if (it.keepDir != "" && it.dir == name) || (it.keepBranch != "" && it.wt.Branch == name) {
				found = true
			}
		}
		if !found {
			return res, core.Errorf(core.CodeValidation, "--force %s: not a worktree or branch this prune keeps (kandev worktree prune --dry-run lists them)", f)
		}
		forced[name] = true
	}
	for _, it := range plan {
		removeDir := it.keepDir == "" || forced[it.dir]
		deleteBranch := it.ours && (it.keepBranch == "" || forced[it.wt.Branch])
		if !removeDir {
			// A kept worktree keeps its branch too: the branch is checked out there.
			deleteBranch = false
		}
		kind := "worktree"
		if !it.isTree {
			kind = "directory"
		}
		entry := core.PruneEntry{Kind: kind, Name: it.dir, Action: "remove", Why: it.why}
		if !removeDir {
			entry.Action, entry.Why = "keep", it.keepDir+" (--force "+it.dir+" removes it)"
		} else if forced[it.dir] {
			entry.Why = it.why + "; forced: " + it.keepDir
		}
		res.Entries = append(res.Entries, entry)
		if it.ours {
			b := core.PruneEntry{Kind: "branch", Name: it.wt.Branch, Action: "remove", Why: "the branch of " + it.dir + ", merged or held by another branch"}
			switch {
			case !removeDir:
				b.Action, b.Why = "keep", "checked out in the kept worktree "+it.dir
			case !deleteBranch:
				b.Action, b.Why = "keep", it.keepBranch+" (--force "+it.wt.Branch+" deletes it)"
			case forced[it.wt.Branch]:
				b.Why = "forced: " + it.keepBranch
			}
			res.Entries = append(res.Entries, b)
		}
		if !removeDir {
			continue
		}
		res.Removed = append(res.Removed, it.dir)
		if deleteBranch {
			res.Branches = append(res.Branches, it.wt.Branch)
		}
		if in.DryRun {
			continue
		}
		wt := it.wt
		if !deleteBranch {
			wt.Branch = "" // not ours to delete, or holding work
		}
		if it.isTree {
			err = wo.ws.Discard(ctx, wt)
		} else {
			err = os.RemoveAll(it.dir)
		}
		if err != nil {
			return res, core.Errorf(core.CodeInternal, "prune %s: %v", it.dir, err)
		}
	}
	if !in.DryRun {
		for _, r := range repos {
			_ = os.Remove(filepath.Join(root, r.Name())) // only when empty
		}
	}
	return res, nil
}

// pruneItem is what a prune found in one directory no task owns.
type pruneItem struct {
	dir    string
	why    string // why it may go
	isTree bool   // a linked worktree git knows
	wt     workspace.Worktree
	ours   bool // wt.Branch is the kandev/<id> branch of the directory's id
	// keepDir and keepBranch say why the directory or the branch stays
	// unless forced ("" = nothing holds it).
	keepDir, keepBranch string
}

// ownedWorktrees returns the resolved directories tasks work in and the
// main checkouts tasks were made from (the only repositories a prune runs
// git in), and refuses when a worktree lies outside root: the store and
// the disk then disagree about where the home is, and no directory here
// can be proved an orphan.
func (wo *Workspaces) ownedWorktrees(root string) (owned, known map[string]bool, _ error) {
	owned, known = map[string]bool{}, map[string]bool{}
	cv := wo.k.cache.rlock()
	defer cv.runlock()
	for _, id := range cv.order { // creation order: the same task is named each time
		t := cv.tasks[id]
		if t == nil {
			continue
		}
		w := t.Workspace
		if w != nil && w.Repo != "" && !known[w.Repo] {
			known[w.Repo] = true
			if real, err := core.RealPath(w.Repo); err == nil {
				known[real] = true
			}
		}
		if w == nil || (w.Mode != core.WorkspaceWorktree && w.Mode != core.WorkspaceInherit) || w.Dir == "" {
			continue
		}
		dir := filepath.Clean(w.Dir)
		if real, err := core.RealPath(dir); err == nil {
			dir = real
		}
		owned[dir] = true
		if rel, err := filepath.Rel(root, dir); err != nil || rel == "." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || rel == ".." {
			return nil, nil, core.Errorf(core.CodeConflict,
				"prune refused: task %s's worktree is recorded at %s, outside this home's %s; the home was moved or is reached by another path, and every worktree here may be a task's. Run the daemon with the home the tasks were made in (or move it back) and prune again",
				t.ID, w.Dir, root)
		}
	}
	return owned, known, nil
}

// planPrune decides what a prune does with dir, which no task works in;
// git runs there only as a worktree one of the known repositories lists.
func (wo *Workspaces) planPrune(ctx context.Context, id, dir string, known map[string]bool) (it pruneItem, _ error) {
	it = pruneItem{dir: dir, why: "no task has id " + id}
	var keep []string // every reason, so a --force knows all it overrides
	defer func() { it.keepDir = strings.Join(keep, "; ") }()
	claimed := false // a task's row names this id: its branch is never ours to delete
	if row, err := wo.k.db.GetTask(ctx, id); err == nil {
		mode := row.Workspace
		if mode == "" {
			mode = core.WorkspaceShared
		}
		switch mode {
		case core.WorkspaceWorktree, core.WorkspaceInherit:
			// Its own record names another place: not provably an orphan.
			keep = append(keep, "task "+id+" records its worktree at "+row.WorktreeDir)
			claimed = true
		default:
			it.why = "task " + id + "'s workspace is " + mode + ", it owns no worktree"
		}
	} else if core.CodeOf(mapStoreErr(err, "task "+id)) != core.CodeNotFound {
		return it, core.Errorf(core.CodeInternal, "prune: read task %s: %v", id, err)
	}
	// Only a linked worktree a known repository lists is asked to git: a
	// stray directory could sit inside another repository, and a .git file
	// could name a git directory (and its config) of anyone's making.
	wt, err := wo.ws.OpenOrphan(ctx, dir, known)
	if err == nil {
		it.wt, it.isTree = wt, true
	}
	if !it.isTree {
		if _, lerr := os.Lstat(filepath.Join(dir, ".git")); lerr == nil {
			keep = append(keep, "not a worktree kandev can read ("+err.Error()+"): kandev runs no git there and cannot tell whether it holds work")
		} else if ents, err := os.ReadDir(dir); err != nil || len(ents) > 0 {
			keep = append(keep, "not a git worktree kandev can read, and not empty: kandev cannot tell whether it holds work")
		}
		return it, nil
	}
	pending, err := wo.ws.Pending(ctx, wt)
	if err != nil {
		keep = append(keep, "its state cannot be read: "+err.Error())
		return it, nil
	}
	if pending != "" {
		n := strings.Count(pending, "\n") + 1
		keep = append(keep, fmt.Sprintf("uncommitted changes in %d files", n))
	}
	b := it.wt.Branch
	it.ours = !claimed && (b == "kandev/"+id || strings.HasPrefix(b, "kandev/"+id+"-"))
	switch {
	case it.ours:
		n, err := wo.ws.UniqueCommits(ctx, wt, "refs/heads/"+b, b)
		switch {
		case err != nil:
			it.keepBranch = "its commits cannot be read: " + err.Error()
		case n > 0:
			it.keepBranch = fmt.Sprintf("%d commits no other branch has", n)
		}
	case b == "":
		// Detached: commits made there are on no branch at all.
		n, err := wo.ws.UniqueCommits(ctx, wt, "HEAD", "")
		switch {
		case err != nil:
			keep = append(keep, "its commits cannot be read: "+err.Error())
		case n > 0:
			keep = append(keep, fmt.Sprintf("a detached HEAD with %d commits no branch has", n))
		}
	}
	return it, nil
}
