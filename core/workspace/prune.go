package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrNotListed is OpenOrphan's refusal: the directory is no worktree that a
// repository the caller trusts lists as its own.
var ErrNotListed = errors.New("not a worktree of a repository kandev's tasks use")

// OpenOrphan opens a linked worktree no task owns, for a prune to judge,
// without following anything the directory itself says: its .git file
// only suggests a repository, which must be one of known (main checkouts
// kandev's tasks recorded) and must list dir among its worktrees. git then
// runs with that repository's directories (ADR 0049), so a .git file or a
// git directory planted in the orphan never lends git a config of its own.
func (m *Manager) OpenOrphan(ctx context.Context, dir string, known map[string]bool) (Worktree, error) {
	dotgit := filepath.Join(dir, ".git")
	f, err := os.OpenFile(dotgit, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return Worktree{}, fmt.Errorf("%s: %w", dir, ErrNotListed)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return Worktree{}, fmt.Errorf("%s: .git is not a file: %w", dir, ErrNotListed)
	}
	buf := make([]byte, 4096)
	n, _ := f.Read(buf)
	gitdir, ok := bytes.CutPrefix(bytes.TrimSpace(buf[:n]), []byte("gitdir:"))
	if !ok {
		return Worktree{}, fmt.Errorf("%s: .git names no git directory: %w", dir, ErrNotListed)
	}
	admin := strings.TrimSpace(string(gitdir))
	if !filepath.IsAbs(admin) {
		admin = filepath.Join(dir, admin)
	}
	// <repo>/.git/worktrees/<name>: the repository the file suggests.
	common := filepath.Dir(filepath.Dir(filepath.Clean(admin)))
	repo := filepath.Dir(common)
	if filepath.Base(common) != ".git" || filepath.Base(filepath.Dir(admin)) != "worktrees" || !known[repo] {
		return Worktree{}, fmt.Errorf("%s: %w", dir, ErrNotListed)
	}
	wt := Worktree{Repo: repo, Dir: dir}
	if !listed(wt) {
		return Worktree{}, fmt.Errorf("%s: %s does not list it: %w", dir, repo, ErrNotListed)
	}
	if out, err := m.gitWT(ctx, wt, "symbolic-ref", "--quiet", "--short", "HEAD"); err == nil {
		wt.Branch = strings.TrimSpace(out)
	}
	return wt, nil
}

// listed reports whether the worktree's repository has an administrative
// directory for it (worktreeEnv found one).
func listed(wt Worktree) bool {
	for _, kv := range worktreeEnv(wt) {
		if d, ok := strings.CutPrefix(kv, "GIT_DIR="); ok {
			return filepath.Base(d) != noSuchWorktree
		}
	}
	return false
}

// Pending lists what a worktree holds that no commit does: `git status
// --porcelain` (changes to tracked files and untracked files git does not
// ignore), "" when there is nothing. A prune must not remove it unasked.
func (m *Manager) Pending(ctx context.Context, wt Worktree) (string, error) {
	out, err := m.gitWT(ctx, wt, "status", "--porcelain")
	if err != nil {
		return "", fmt.Errorf("status of %s: %w", wt.Dir, err)
	}
	return strings.TrimSpace(out), nil
}

// UniqueCommits counts the commits reachable from rev (in the worktree) that no
// branch, tag or remote-tracking branch other than the excluded branch
// holds: what deleting that branch, or removing a detached worktree,
// would lose.
func (m *Manager) UniqueCommits(ctx context.Context, wt Worktree, rev, exclude string) (int, error) {
	if strings.HasPrefix(rev, "-") || strings.HasPrefix(exclude, "-") {
		return 0, fmt.Errorf("bad revision %q", rev)
	}
	args := []string{"rev-list", "--count", rev, "--not"}
	if exclude != "" {
		args = append(args, "--exclude="+exclude)
	}
	args = append(args, "--branches", "--tags", "--remotes")
	out, err := m.gitWT(ctx, wt, args...)
	if err != nil {
		return 0, fmt.Errorf("commits only %s has: %w", rev, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		return 0, fmt.Errorf("commits only %s has: read %q", rev, strings.TrimSpace(out))
	}
	return n, nil
}
