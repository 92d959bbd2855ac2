// Package workspace gives a task its own git worktree and reviews, merges or
// discards what was done there. It shells out to the user's git so that
// worktrees, merges and diffs behave exactly as their git does.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// DefaultTimeout bounds one git command. Worktree creation on a large
// repository checks out every file, so it is generous; a hung git (a
// credential prompt, a lock held by a dead process) still ends.
const DefaultTimeout = 2 * time.Minute

// ErrNotRepo is returned when a directory is not inside a git work tree.
var ErrNotRepo = errors.New("not inside a git repository")

// ErrNoGit is returned when no git executable is on PATH.
var ErrNoGit = errors.New("git is not installed (not found on PATH)")

// GitError is a git command that failed, with what it said.
type GitError struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *GitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		return fmt.Sprintf("git %s: %v", strings.Join(e.Args, " "), e.Err)
	}
	return fmt.Sprintf("git %s: %v: %s", strings.Join(e.Args, " "), e.Err, msg)
}

func (e *GitError) Unwrap() error { return e.Err }

// gitEnv runs one git command in dir through the Manager's Runner,
// bounded by its timeout, and returns stdout. env entries are kandev's own
// (GIT_DIR, GIT_INDEX_FILE, …), added to the runner's environment.
func (m *Manager) gitEnv(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	return m.runner.Run(ctx, GitCall{Dir: dir, Env: env, Timeout: m.Timeout, Args: args})
}

// gitIn is gitEnv with stdin.
func (m *Manager) gitIn(ctx context.Context, dir string, env []string, stdin string, args ...string) (string, error) {
	return m.runner.Run(ctx, GitCall{Dir: dir, Env: env, Stdin: strings.NewReader(stdin), Timeout: m.Timeout, Args: args})
}

// exitCode reports the exit status of a failed git command, or -1.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// splitNUL splits git's -z output into its names, dropping the empty
// ones.
func splitNUL(s string) []string {
	var out []string
	for _, p := range strings.Split(s, "\x00") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}
