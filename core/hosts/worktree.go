package hosts

import (
	"context"
	"fmt"
	"strings"
)

// PushBack brings what a merge committed in the local worktree to the
// host: the local branch's head (a descendant of the host's, fetched back
// just before) is pushed to a ref of its own there and the host's
// worktree is moved onto it with `git reset` (mixed: its files, which the
// commit holds, stay as they are). Without it the host's branch stays at
// the commit before the merge, and the task's next run there, its next
// diff and merge, would show the merged work as new. A host whose head
// moved meanwhile (not an ancestor) is left as it is, and said so.
func (r *Remote) PushBack(ctx context.Context) error {
	if r.Worktree.Dir == "" {
		return nil
	}
	dir, err := r.prepareDir(ctx)
	if err != nil {
		return err
	}
	repo, wt := RepoPath(dir, r.Worktree.Repo), WorktreePath(dir, r.Worktree.Dir)
	ref := "refs/kandev/merged/" + shortHash(r.Worktree.Dir)
	if err := r.git(ctx, r.Worktree.Dir, "push", "-q", "--force", r.url(repo), "HEAD:"+ref); err != nil {
		return err
	}
	out, err := r.Pool.Script(ctx, r.Target, fmt.Sprintf(`w=%s; ref=%s
[ -e "$w/.git" ] || exit 0
cd "$w" || exit 1
c=$(git rev-parse -q --verify "$ref") || exit 1
git update-ref -d "$ref"
if ! git merge-base --is-ancestor HEAD "$c"; then echo moved; exit 0; fi
git reset -q "$c"
`, Quote(wt), Quote(ref)))
	if err != nil {
		return fmt.Errorf("update the worktree on host %s: %w", r.Target.Name, err)
	}
	if strings.TrimSpace(out) == "moved" {
		return fmt.Errorf("the branch on host %s moved since the fetch; left as it is", r.Target.Name)
	}
	return nil
}

// RemoveWorktree removes the task's directory on the host once its local
// worktree is gone (discarded, or archived done): the worktree there, its
// branch and snapshot ref in kandev's repository on the host; or, for a
// task without a worktree, its directory of its own. Nothing there is
// work the local side lacks: the caller fetched it back first.
func (r *Remote) RemoveWorktree(ctx context.Context) error {
	dir, err := r.prepareDir(ctx)
	if err != nil {
		return err
	}
	var script string
	if r.Worktree.Dir == "" {
		script = "rm -rf " + Quote(dir+"/worktrees/task-"+shortHash(r.Key)) + "\n"
	} else {
		repo, wt := RepoPath(dir, r.Worktree.Repo), WorktreePath(dir, r.Worktree.Dir)
		script = fmt.Sprintf(`r=%s; w=%s; b=%s; s=%s
[ -d "$r" ] || exit 0
git --git-dir="$r" worktree remove --force "$w" 2>/dev/null || rm -rf "$w"
git --git-dir="$r" worktree prune
git --git-dir="$r" update-ref -d "$s" 2>/dev/null
git --git-dir="$r" branch -q -D "$b" 2>/dev/null
exit 0
`, Quote(repo), Quote(wt), Quote(r.Worktree.Branch), Quote("refs/kandev/snapshot/"+shortHash(r.Worktree.Dir)))
	}
	if _, err := r.Pool.Script(ctx, r.Target, script); err != nil {
		return fmt.Errorf("remove the worktree on host %s: %w", r.Target.Name, err)
	}
	return nil
}
