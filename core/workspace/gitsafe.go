package workspace

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
)

// Nothing an agent wrote runs on the host (ADR 0049, ADR 0065). Every git
// command kandev runs goes through Runner (gitrun.go), and in a worktree
// git is told its real git directory (the administrative directory the
// main repository lists for it, and the main repository's own), so a .git
// file or a commondir the agent replaced is never followed to a config of
// its own.

// worktreeEnv names a worktree's git directories from kandev's records:
// the main checkout's .git and the administrative directory under it
// whose gitdir file names this worktree. When there is none, git is
// pointed at a directory that does not exist and fails, rather than left
// to find one through the worktree's own .git.
func worktreeEnv(wt Worktree) []string {
	common := filepath.Join(wt.Repo, ".git")
	admin := filepath.Join(common, "worktrees", noSuchWorktree)
	if ents, err := os.ReadDir(filepath.Join(common, "worktrees")); err == nil {
		want := filepath.Join(wt.Dir, ".git")
		for _, e := range ents {
			d := filepath.Join(common, "worktrees", e.Name())
			b, err := os.ReadFile(filepath.Join(d, "gitdir"))
			if err == nil && filepath.Clean(string(bytes.TrimSpace(b))) == want {
				admin = d
				break
			}
		}
	}
	return []string{"GIT_DIR=" + admin, "GIT_COMMON_DIR=" + common, "GIT_WORK_TREE=" + wt.Dir}
}

// WorktreeEnv is worktreeEnv, for the packages that run git in a task's
// worktree themselves (a host's fetch-back).
func WorktreeEnv(wt Worktree) []string { return worktreeEnv(wt) }

// noSuchWorktree is the administrative directory worktreeEnv names when
// the repository lists none for the worktree.
const noSuchWorktree = "kandev-no-such-worktree"

// gitWT runs git in a task's worktree with its real git directories.
func (m *Manager) gitWT(ctx context.Context, wt Worktree, args ...string) (string, error) {
	return m.gitEnv(ctx, wt.Dir, worktreeEnv(wt), args...)
}

// SetupMarker is the file in a worktree's administrative directory that
// records its .kandev/setup has run. A confined agent never sees that
// directory (its own is mounted over it, ADR 0065), and its setup runs in
// its sandbox anyway.
const SetupMarker = "kandev-setup-done"
