package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrNothingToPush is returned when the task's branch has no commit of
// its own, or the remote has it all already.
var ErrNothingToPush = errors.New("nothing to push")

// ErrUpToDate is the ErrNothingToPush of a remote that has the branch as
// it is: a pull request can still be opened from it.
var ErrUpToDate = fmt.Errorf("%w: up to date", ErrNothingToPush)

// PushOptions say where a task's branch goes and how its uncommitted
// work is committed first.
type PushOptions struct {
	Remote  string // default origin
	Message string // the commit message for uncommitted work
	// Gone: the worktree was removed (an archived done task); its work
	// is all on the branch, pushed from the main checkout's repository.
	Gone bool
}

// PushResult says what a push did.
type PushResult struct {
	Remote    string `json:"remote"`
	Commit    string `json:"commit"`    // the branch's head, as pushed
	Committed bool   `json:"committed"` // uncommitted work was committed first
}

// Push pushes the task's branch to a remote of the repository, with
// upstream set, after committing the worktree's uncommitted work (as
// stageWork chooses it, ADR 0041). It refuses (ErrRefused) a remote the
// repository does not have before committing anything; when the remote
// refuses the push, the commit it made is undone (its changes left
// uncommitted in the worktree, unstaged), so a failed push changes
// nothing.
func (m *Manager) Push(ctx context.Context, wt Worktree, o PushOptions) (PushResult, error) {
	remote := strings.TrimSpace(o.Remote)
	if remote == "" {
		remote = "origin"
	}
	if strings.HasPrefix(remote, "-") || strings.ContainsAny(remote, " \t\n") {
		return PushResult{}, fmt.Errorf("%w: %q is not a remote's name", ErrRefused, remote)
	}
	if strings.HasPrefix(wt.Branch, "-") || wt.Branch == "" {
		return PushResult{}, fmt.Errorf("push: bad branch %q", wt.Branch)
	}
	defer m.lock(wt.Repo)()
	if err := m.importLocked(ctx, wt); err != nil {
		return PushResult{}, err
	}
	if _, err := m.git(ctx, wt.Repo, "remote", "get-url", "--", remote); err != nil {
		remotes, _ := m.git(ctx, wt.Repo, "remote")
		have := strings.Join(strings.Fields(remotes), ", ")
		if have == "" {
			have = "none"
		}
		return PushResult{}, fmt.Errorf("%w: the repository %s has no remote %q (its remotes: %s); add one with git remote add %s URL, or pass --remote", ErrRefused, wt.Repo, remote, have, remote)
	}
	res := PushResult{Remote: remote}
	if !o.Gone {
		committed, err := m.commitPendingAs(ctx, wt, o.Message)
		if err != nil {
			return PushResult{}, err
		}
		res.Committed = committed
	}
	undo := func() {
		if res.Committed {
			m.gitWT(context.WithoutCancel(ctx), wt, "reset", "--quiet", "--mixed", "HEAD~1")
			m.syncPrivate(context.WithoutCancel(ctx), wt)
		}
	}
	ref := "refs/heads/" + wt.Branch
	ahead, err := m.git(ctx, wt.Repo, "rev-list", "--count", wt.BaseCommit+".."+ref)
	if err != nil {
		undo()
		return PushResult{}, fmt.Errorf("push: %w", err)
	}
	if strings.TrimSpace(ahead) == "0" {
		undo()
		return PushResult{}, fmt.Errorf("%w: %s has no commits since its base %s, and no uncommitted work", ErrNothingToPush, wt.Branch, shortRef(wt.BaseCommit))
	}
	out, err := m.runner.Run(ctx, GitCall{Dir: wt.Repo, Remote: true, Timeout: m.Timeout,
		Args: []string{"push", "--porcelain", "--set-upstream", remote, ref + ":" + ref}})
	if err != nil {
		undo()
		var ge *GitError
		msg := err.Error()
		if errors.As(err, &ge) {
			msg = strings.TrimSpace(ge.Stderr + "\n" + out)
		}
		return PushResult{}, fmt.Errorf("%w: %s refused the push of %s:\n%s", ErrRefused, remote, wt.Branch, msg)
	}
	// --porcelain: "=" flags a ref that was up to date already.
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "=\t") {
			res.Commit, _ = m.resolve(ctx, wt.Repo, ref)
			return res, fmt.Errorf("%w: %s already has %s as it is", ErrUpToDate, remote, wt.Branch)
		}
	}
	if res.Commit, err = m.resolve(ctx, wt.Repo, ref); err != nil {
		return PushResult{}, fmt.Errorf("push: %w", err)
	}
	return res, nil
}

func shortRef(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
