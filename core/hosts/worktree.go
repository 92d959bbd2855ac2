package hosts

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/kandev/kandev/core/workspace"
)

// prepareWorktree gives the task its directory on the host: for a task
// with a worktree, its branch pushed to kandev's repository there and a
// worktree of it (once: a later run continues in the same one). It returns
// the directory the agent starts in.
func (r *Remote) prepareWorktree(ctx context.Context, dir string) (string, error) {
	if r.Worktree.Dir == "" {
		d := dir + "/worktrees/task-" + shortHash(r.Key)
		if _, err := r.Pool.Script(ctx, r.Target, "mkdir -p "+Quote(d)+"\n"); err != nil {
			return "", err
		}
		return d, nil
	}
	repo, wt := RepoPath(dir, r.Worktree.Repo), WorktreePath(dir, r.Worktree.Dir)
	out, err := r.Pool.Script(ctx, r.Target, fmt.Sprintf(`r=%s; w=%s
[ -d "$r" ] || git init -q --bare "$r" || exit 1
if [ -e "$w/.git" ]; then echo have; fi
`, Quote(repo), Quote(wt)))
	if err != nil {
		return "", fmt.Errorf("repository on host %s: %w", r.Target.Name, err)
	}
	if strings.TrimSpace(out) != "have" {
		ref := "refs/heads/" + r.Worktree.Branch
		if err := r.git(ctx, r.Worktree.Dir, "push", "-q", "--force", r.url(repo), "HEAD:"+ref); err != nil {
			return "", err
		}
		if _, err := r.Pool.Script(ctx, r.Target, fmt.Sprintf("git --git-dir=%s worktree add -q %s %s\n",
			Quote(repo), Quote(wt), Quote(r.Worktree.Branch))); err != nil {
			return "", fmt.Errorf("worktree on host %s: %w", r.Target.Name, err)
		}
		if err := r.copyIncluded(ctx, wt); err != nil {
			return "", err
		}
	}
	if r.RelDir != "" && r.RelDir != "." {
		wt = path.Join(wt, filepath.ToSlash(r.RelDir))
		if _, err := r.Pool.Script(ctx, r.Target, "mkdir -p "+Quote(wt)+"\n"); err != nil {
			return "", err
		}
	}
	return wt, nil
}

// url is the host repository's address for git over ssh.
func (r *Remote) url(p string) string {
	u := "ssh://" + r.Target.Dest.String()
	if r.Target.Dest.Port != 0 {
		u += fmt.Sprintf(":%d", r.Target.Dest.Port)
	}
	return u + p
}

// git runs git in the task's local worktree, through kandev's one runner
// (ADR 0065), with its ssh riding the host's master: a push to or fetch
// from the host's repository, whose objects the fetch checks.
func (r *Remote) git(ctx context.Context, dir string, args ...string) error {
	_, err := workspace.Git(ctx, workspace.GitCall{Dir: dir, Remote: true, Args: args,
		Env: append(r.localEnv(), "GIT_SSH_COMMAND="+r.sshCommand(), "GIT_SSH_VARIANT=ssh")})
	if err != nil {
		return fmt.Errorf("git %s (host %s): %w", args[0], r.Target.Name, err)
	}
	return nil
}

// localEnv names the local worktree's real git directories (ADR 0049).
func (r *Remote) localEnv() []string {
	return workspace.WorktreeEnv(workspace.Worktree{Repo: r.Worktree.Repo, Dir: r.Worktree.Dir})
}

// sshCommand is GIT_SSH_COMMAND: the pool's ssh line over the master
// (git appends the destination, and -p for a port in the URL).
func (r *Remote) sshCommand() string {
	a := []string{Quote(r.Pool.ssh())}
	if r.Pool.Config != "" {
		a = append(a, "-F", Quote(r.Pool.Config))
	}
	a = append(a, "-o", Quote("ControlPath="+r.Pool.ControlPath(r.Target.Name)), "-o", "ControlMaster=no", "-o", "BatchMode=yes")
	if r.Target.Identity != "" {
		a = append(a, "-i", Quote(r.Target.Identity), "-o", "IdentitiesOnly=yes")
	}
	return strings.Join(a, " ")
}

// hostWorktree is the task's worktree on the host and kandev's repository
// there that it belongs to, with kandev's directories on the host made.
// Both are "" for a task without a worktree, which has none there to
// fetch back or update.
func (r *Remote) hostWorktree(ctx context.Context) (repo, wt string, err error) {
	if r.Worktree.Dir == "" {
		return "", "", nil
	}
	dir, err := r.prepareDir(ctx)
	if err != nil {
		return "", "", err
	}
	return RepoPath(dir, r.Worktree.Repo), WorktreePath(dir, r.Worktree.Dir), nil
}

// inHostWorktree starts a script in the host's worktree $w; a task not
// yet run on the host has none, and nothing to do there.
const inHostWorktree = `[ -e "$w/.git" ] || exit 0
cd "$w" || exit 1
`

// FetchBack brings the host's worktree into the local one, so diff, merge
// and discard see in the main checkout what the agent did on the host: the
// branch's commits there and its uncommitted changes (a snapshot commit
// made on the host with a private index, the host's worktree untouched).
// The local worktree then holds the host's: branch at the host's head,
// files as on the host. A task not yet run on the host has nothing there.
func (r *Remote) FetchBack(ctx context.Context) error {
	repo, wt, err := r.hostWorktree(ctx)
	if err != nil || repo == "" {
		return err
	}
	ref := "refs/kandev/snapshot/" + shortHash(r.Worktree.Dir)
	out, err := r.Pool.Script(ctx, r.Target, fmt.Sprintf("w=%s\n"+inHostWorktree+`export GIT_INDEX_FILE="$(git rev-parse --absolute-git-dir)/kandev-snapshot.index"
export GIT_AUTHOR_NAME=kandev GIT_AUTHOR_EMAIL=kandev@localhost GIT_COMMITTER_NAME=kandev GIT_COMMITTER_EMAIL=kandev@localhost
rm -f "$GIT_INDEX_FILE"
git read-tree HEAD && git add -A && t=$(git write-tree) && c=$(git commit-tree "$t" -p HEAD -m 'kandev: the worktree on host') && git update-ref %s "$c" || exit 1
rm -f "$GIT_INDEX_FILE"
echo "$c"
`, Quote(wt), Quote(ref)))
	if err != nil {
		return fmt.Errorf("snapshot the worktree on host %s: %w", r.Target.Name, err)
	}
	snap := strings.TrimSpace(out)
	if snap == "" {
		return nil
	}
	if err := r.git(ctx, r.Worktree.Dir, "fetch", "-q", "--no-tags", r.url(repo), ref); err != nil {
		return err
	}
	// Branch at the host's head, the working tree at the snapshot, the
	// index back at the head: the host's state, uncommitted as it was.
	for _, args := range [][]string{{"reset", "-q", "--hard", snap + "^"}, {"read-tree", "-u", "--reset", snap}, {"reset", "-q"}} {
		if _, err := workspace.Git(ctx, workspace.GitCall{Dir: r.Worktree.Dir, Env: r.localEnv(), Args: args}); err != nil {
			return err
		}
	}
	return nil
}

// PushBack brings what a merge committed in the local worktree to the
// host: the local branch's head (a descendant of the host's, fetched back
// just before) is pushed to a ref of its own there and the host's
// worktree is moved onto it with `git reset` (mixed: its files, which the
// commit holds, stay as they are). Without it the host's branch stays at
// the commit before the merge, and the task's next run there, its next
// diff and merge, would show the merged work as new. A host whose head
// moved meanwhile (not an ancestor) is left as it is, and said so.
func (r *Remote) PushBack(ctx context.Context) error {
	repo, wt, err := r.hostWorktree(ctx)
	if err != nil || repo == "" {
		return err
	}
	ref := "refs/kandev/merged/" + shortHash(r.Worktree.Dir)
	if err := r.git(ctx, r.Worktree.Dir, "push", "-q", "--force", r.url(repo), "HEAD:"+ref); err != nil {
		return err
	}
	out, err := r.Pool.Script(ctx, r.Target, fmt.Sprintf("w=%s; ref=%s\n"+inHostWorktree+`c=$(git rev-parse -q --verify "$ref") || exit 1
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
