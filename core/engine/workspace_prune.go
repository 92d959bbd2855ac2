package engine

// The worktrees no task owns, removed (Prune, ADR 0042): a create cut
// between its worktree and its row, a discard interrupted.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/workspace"
)

// Prune serves api.Client's PruneWorktrees (wire.PruneWorktrees): it
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
func (wo *Workspaces) Prune(ctx context.Context, in api.PruneInput) (api.PruneResult, error) {
	if err := wo.may(core.ActorFrom(ctx), ActPrune, core.Task{}); err != nil {
		return api.PruneResult{}, err
	}
	wo.wsMu.Lock()
	defer wo.wsMu.Unlock()
	res := api.PruneResult{Removed: []string{}, Branches: []string{}, Entries: []api.PruneEntry{}}
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
	plan, err := wo.planOrphans(ctx, root, repos, owned, known)
	if err != nil {
		return res, err
	}
	forced, err := pruneForced(in.Force, plan)
	if err != nil {
		return res, err
	}
	for _, it := range plan {
		removeDir, deleteBranch := it.decide(forced)
		res.Entries = append(res.Entries, it.entries(forced, removeDir, deleteBranch)...)
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
		if err := wo.removePruned(ctx, it, deleteBranch); err != nil {
			return res, err
		}
	}
	if !in.DryRun {
		for _, r := range repos {
			_ = os.Remove(filepath.Join(root, r.Name())) // only when empty
		}
	}
	return res, nil
}

// planOrphans plans what a prune does with each directory under root's
// repositories that no task owns (planPrune).
func (wo *Workspaces) planOrphans(ctx context.Context, root string, repos []os.DirEntry, owned, known map[string]bool) ([]pruneItem, error) {
	var plan []pruneItem
	for _, r := range repos {
		if !r.IsDir() {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(root, r.Name()))
		if err != nil {
			return nil, core.Errorf(core.CodeInternal, "prune: %v", err)
		}
		for _, ent := range entries {
			dir := filepath.Join(root, r.Name(), ent.Name())
			if owned[dir] {
				continue
			}
			it, err := wo.planPrune(ctx, ent.Name(), dir, known)
			if err != nil {
				return nil, err
			}
			plan = append(plan, it)
		}
	}
	return plan, nil
}

// pruneForced is the set of --force names, resolved, each checked against
// the plan.
func pruneForced(force []string, plan []pruneItem) (map[string]bool, error) {
	// Every --force name must be something this prune would otherwise
	// keep: a mistyped one must not pass for consent.
	forced := map[string]bool{}
	for _, f := range force {
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
			return nil, core.Errorf(core.CodeValidation, "--force %s: not a worktree or branch this prune keeps (kandev worktree prune --dry-run lists them)", f)
		}
		forced[name] = true
	}
	return forced, nil
}

// decide says whether a prune removes the item's directory and deletes its
// branch, given the names forced.
func (it pruneItem) decide(forced map[string]bool) (removeDir, deleteBranch bool) {
	removeDir = it.keepDir == "" || forced[it.dir]
	deleteBranch = it.ours && (it.keepBranch == "" || forced[it.wt.Branch])
	if !removeDir {
		// A kept worktree keeps its branch too: the branch is checked out there.
		deleteBranch = false
	}
	return removeDir, deleteBranch
}

// entries are what a prune reports of the item: its directory, then its
// branch when the branch is ours.
func (it pruneItem) entries(forced map[string]bool, removeDir, deleteBranch bool) []api.PruneEntry {
	kind := "worktree"
	if !it.isTree {
		kind = "directory"
	}
	entry := api.PruneEntry{Kind: kind, Name: it.dir, Action: "remove", Why: it.why}
	if !removeDir {
		entry.Action, entry.Why = "keep", it.keepDir+" (--force "+it.dir+" removes it)"
	} else if forced[it.dir] {
		entry.Why = it.why + "; forced: " + it.keepDir
	}
	out := []api.PruneEntry{entry}
	if it.ours {
		b := api.PruneEntry{Kind: "branch", Name: it.wt.Branch, Action: "remove", Why: "the branch of " + it.dir + ", merged or held by another branch"}
		switch {
		case !removeDir:
			b.Action, b.Why = "keep", "checked out in the kept worktree "+it.dir
		case !deleteBranch:
			b.Action, b.Why = "keep", it.keepBranch+" (--force "+it.wt.Branch+" deletes it)"
		case forced[it.wt.Branch]:
			b.Why = "forced: " + it.keepBranch
		}
		out = append(out, b)
	}
	return out
}

// removePruned removes the item's directory, with its branch when
// deleteBranch says so.
func (wo *Workspaces) removePruned(ctx context.Context, it pruneItem, deleteBranch bool) error {
	wt := it.wt
	if !deleteBranch {
		wt.Branch = "" // not ours to delete, or holding work
	}
	var err error
	if it.isTree {
		err = wo.ws.Discard(ctx, wt)
	} else {
		err = os.RemoveAll(it.dir)
	}
	if err != nil {
		return core.Errorf(core.CodeInternal, "prune %s: %v", it.dir, err)
	}
	return nil
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
