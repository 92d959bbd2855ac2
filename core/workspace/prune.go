package workspace

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Pending lists what a worktree holds that no commit does: `git status
// --porcelain` (changes to tracked files and untracked files git does not
// ignore), "" when there is nothing. A prune must not remove it unasked.
func (m *Manager) Pending(ctx context.Context, dir string) (string, error) {
	out, err := m.git(ctx, dir, "status", "--porcelain")
	if err != nil {
		return "", fmt.Errorf("status of %s: %w", dir, err)
	}
	return strings.TrimSpace(out), nil
}

// UniqueCommits counts the commits reachable from rev (run in dir) that no
// branch, tag or remote-tracking branch other than the excluded branch
// holds: what deleting that branch, or removing a detached worktree,
// would lose.
func (m *Manager) UniqueCommits(ctx context.Context, dir, rev, exclude string) (int, error) {
	if strings.HasPrefix(rev, "-") || strings.HasPrefix(exclude, "-") {
		return 0, fmt.Errorf("bad revision %q", rev)
	}
	args := []string{"rev-list", "--count", rev, "--not"}
	if exclude != "" {
		args = append(args, "--exclude="+exclude)
	}
	args = append(args, "--branches", "--tags", "--remotes")
	out, err := m.git(ctx, dir, args...)
	if err != nil {
		return 0, fmt.Errorf("commits only %s has: %w", rev, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		return 0, fmt.Errorf("commits only %s has: read %q", rev, strings.TrimSpace(out))
	}
	return n, nil
}
