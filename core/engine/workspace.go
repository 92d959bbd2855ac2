package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/kandev/kandev/core"
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
}

// planWorkspace decides where a new task works (ADR 0027). With no mode
// given: a child created without a directory works in its parent's
// worktree; a task given a directory inside a git repository gets a
// worktree of its own; anything else runs in its directory as it is. The
// daemon's own directory (no directory given, no parent) never gets a
// worktree: it is not a place the user chose.
func (e *Engine) planWorkspace(ctx context.Context, in core.CreateTaskInput, parent core.Task, cwd string) (wsPlan, error) {
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
		case in.CWD != "" && e.opts.Home.Dir != "":
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
		return wsPlan{}, core.Errorf(core.CodeValidation, "--base and --branch need a worktree of the task's own (workspace %s)", mode)
	}
	switch mode {
	case core.WorkspaceShared:
		return wsPlan{mode: mode}, nil
	case core.WorkspaceInherit:
		return wsPlan{mode: mode, repo: pw.Repo, dir: pw.Dir, branch: pw.Branch, baseCommit: pw.Base}, nil
	}
	if e.opts.Home.Dir == "" {
		return wsPlan{}, core.Errorf(core.CodeInternal, "no kandev home to keep worktrees in")
	}
	repo, prefix, err := e.ws.Locate(ctx, cwd)
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
	if p.base == "" && parentHasTree && pw.Repo == repo {
		p.base = pw.Branch // a new worktree of a child starts from its parent's work
	}
	return p, nil
}

// makeWorktree creates the worktree of a task about to be inserted and
// fills the row's workspace fields; the agent's directory is the same
// place inside the worktree as the one the task was created in.
func (e *Engine) makeWorktree(ctx context.Context, p wsPlan, row *store.Task) error {
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
	wt, err := e.ws.Create(ctx, workspace.CreateOptions{
		Repo: p.repo, Dir: workspace.Dir(e.opts.Home.Dir, p.repo, row.ID), Branch: branch, Base: p.base})
	if err != nil {
		return core.Errorf(core.CodeValidation, "%v", err)
	}
	row.RepoRoot, row.WorktreeDir, row.Branch, row.BaseCommit = wt.Repo, wt.Dir, wt.Branch, wt.BaseCommit
	row.CWD = wt.Dir
	if p.prefix != "" {
		// The directory may be untracked and so absent from the branch:
		// then the agent starts at the worktree's top.
		if st, err := os.Stat(filepath.Join(wt.Dir, p.prefix)); err == nil && st.IsDir() {
			row.CWD = filepath.Join(wt.Dir, p.prefix)
		}
	}
	return nil
}

// dropWorktree undoes makeWorktree for a row that was never inserted.
func (e *Engine) dropWorktree(ctx context.Context, row store.Task) {
	if row.Workspace != core.WorkspaceWorktree || row.WorktreeDir == "" {
		return
	}
	if err := e.ws.Discard(context.WithoutCancel(ctx), worktreeOf(row.RepoRoot, row.WorktreeDir, row.Branch, row.BaseCommit)); err != nil {
		e.log.Warn("remove the worktree of a task that was not created", "dir", row.WorktreeDir, "err", err)
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
