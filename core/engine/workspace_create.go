package engine

// A new task's workspace (ADR 0027): where it works, decided before its
// row exists (planWorkspace), its worktree made before the row is inserted
// (makeWorktree) and undone when the row is not (dropWorktree).

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/workspace"
	"github.com/kandev/kandev/store"
)

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
func (wo *Workspaces) planWorkspace(ctx context.Context, in api.CreateTaskInput, parent core.Task, cwd string) (wsPlan, error) {
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
