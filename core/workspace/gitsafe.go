package workspace

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
)

// Nothing an agent wrote runs on the host (ADR 0049). kandev's git
// commands over a task's files (diff, merge, status, the commit of pending
// work, setup's marker) run with hooks and core.fsmonitor off, given on
// the command line so that no config file, the repository's or one an
// agent planted, can turn them back on; and in a worktree git is told its
// real git directory (the administrative directory the main repository
// lists for it, and the main repository's own), so a .git file or a
// commondir the agent replaced is never followed to a config of its own.

// safeFlags go before every git command kandev runs.
var safeFlags = []string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"}

// safeArgs is args behind safeFlags.
func safeArgs(args []string) []string {
	return append(append(make([]string, 0, len(safeFlags)+len(args)), safeFlags...), args...)
}

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

// noSuchWorktree is the administrative directory worktreeEnv names when
// the repository lists none for the worktree.
const noSuchWorktree = "kandev-no-such-worktree"

// gitWT runs git in a task's worktree with its real git directories.
func (m *Manager) gitWT(ctx context.Context, wt Worktree, args ...string) (string, error) {
	return git(ctx, m.Timeout, wt.Dir, worktreeEnv(wt), args...)
}

// SetupMarker is the file in a worktree's administrative directory that
// records its .kandev/setup has run. A confined agent cannot remove it
// (it is mounted read-only), so a setup script the agent writes later is
// never run on the host.
const SetupMarker = "kandev-setup-done"

// MarkSetupDone records that the worktree's setup ran (or that none is to
// run any more): before a confined agent's first session, whose .kandev/setup
// would otherwise run on the host at a later launch if it wrote one.
func MarkSetupDone(wt Worktree) (string, error) {
	for _, kv := range worktreeEnv(wt) {
		if dir, ok := strings.CutPrefix(kv, "GIT_DIR="); ok {
			marker := filepath.Join(dir, SetupMarker)
			f, err := os.OpenFile(marker, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return "", err
			}
			return marker, f.Close()
		}
	}
	return "", os.ErrNotExist
}
