package engine

import (
	"context"
	"path/filepath"
	"sync"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/hosts"
	"github.com/kandev/kandev/core/workspace"
	"github.com/kandev/kandev/store"
)

// Workspaces is the engine's workspaces area (ADR 0027, docs/workspaces.md):
// a task's worktree from its create (workspace_create.go) to its end
// (workspace_retire.go: Discard, and retireWorktree when a done task is
// archived; workspace_prune.go: Prune, for the ones no task owns), and what
// is done with the work in it: Diff (workspace_diff.go), Review (review.go),
// Merge (workspace_merge.go), Push and PullRequest (workspace_push.go) —
// api.Client's workspace operations, which the daemon routes here — the
// agents' diff, pull request and review tools, the review comments a
// message carries (planReview), a confined task's commits brought in
// (importWork) and the worktree's .kandev/setup (setupWorktree). Its
// fields are all it may touch: the kernel, its own state, and what other
// areas give it, each named.
//
// Lock: wsMu is its own. A create holds it shared from its worktree to its
// row (Engine.commitCreate, through createBegin and createEnd), a prune
// exclusively (Prune), so a worktree about to get its task is never taken
// for an orphan. Nothing done under it takes a task's rt.mu; held, it
// comes before the task cache's lock (ownedWorktrees), the store's
// transactions (the create's row) and core/workspace's own locks.
type Workspaces struct {
	k *kernel
	// ws does the git work (core/workspace); the hosts area is given it too
	// (hostSetup).
	ws *workspace.Manager
	// wsMu: creates hold it shared from their worktree to their row, a
	// worktree prune exclusively.
	wsMu sync.RWMutex

	// What the other areas give it (compose.go):
	// task resolves a task's id or prefix (kernel.go); authorized resolves
	// it and asks may (authorize.go).
	task       func(ctx context.Context, ref string) (core.Task, error)
	authorized func(ctx context.Context, a core.Actor, ref string, act Action) (core.Task, error)
	// may is the authorizer (authorize.go): who diffs, reviews, merges,
	// pushes, discards and prunes.
	may func(a core.Actor, act Action, t core.Task) error
	// describeSender names a review's author in the agent's notice
	// (render.go).
	describeSender func(sender string) string
	// setupConfiner runs a confined task's .kandev/setup in its sandbox
	// (sandbox.go).
	setupConfiner func(t core.Task, prof core.Profile, sessionID string) workspace.Confiner

	// What the hosts area gives it (hosts.go, hostworktree.go; set by
	// withHosts), for a task on a host: its worktree fetched back before
	// a diff, merge or discard (remoteFor) and before a retire
	// (hostFetchBack), a merge pushed back (hostMerged), the host's copy
	// removed with the local one (hostWorktreeGone).
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

// withHosts takes from the hosts area what it gives the workspaces (New).
func (wo *Workspaces) withHosts(ho *Hosts) {
	wo.remoteFor = ho.remoteFor
	wo.hostFetchBack = ho.hostFetchBack
	wo.hostMerged = ho.hostMerged
	wo.hostWorktreeGone = ho.hostWorktreeGone
}

// createBegin and createEnd hold the worktrees shared for a create, from
// its worktree to its row (Engine.commitCreate): a prune waits for it.
func (wo *Workspaces) createBegin() { wo.wsMu.RLock() }
func (wo *Workspaces) createEnd()   { wo.wsMu.RUnlock() }

// Engine's api.Client methods of the workspaces area, forwarded to it
// until api.Client is split by area (issue 35); the daemon routes their
// rows to Workspaces directly.

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
	t, err := wo.authorized(ctx, core.ActorFrom(ctx), ref, verb)
	if err != nil {
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
