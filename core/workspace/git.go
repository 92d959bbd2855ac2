// Package workspace gives a task its own git worktree and reviews, merges or
// discards what was done there. It shells out to the user's git so that
// worktrees, merges and diffs behave exactly as their git does.
package workspace

import (
	"bytes"
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

// git runs one git command in dir, bounded by timeout, and returns stdout.
// env entries are added to the inherited environment.
func git(ctx context.Context, timeout time.Duration, dir string, env []string, args ...string) (string, error) {
	return gitIn(ctx, timeout, dir, env, "", args...)
}

// gitIn is git with stdin.
func gitIn(ctx context.Context, timeout time.Duration, dir string, env []string, stdin string, args ...string) (string, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	path, err := exec.LookPath("git")
	if err != nil {
		return "", ErrNoGit
	}
	cmd := exec.CommandContext(ctx, path, safeArgs(args)...)
	cmd.Dir = dir
	// Never wait on a prompt for credentials or an editor: kandev runs
	// git without a terminal the user can see.
	cmd.Env = append(cmd.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_EDITOR=true", "LC_ALL=C")
	cmd.Env = append(cmd.Env, env...)
	cmd.WaitDelay = 5 * time.Second
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (after %s)", ctx.Err(), timeout)
		}
		return stdout.String(), &GitError{Args: args, Stderr: stderr.String(), Err: err}
	}
	return stdout.String(), nil
}

// exitCode reports the exit status of a failed git command, or -1.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}
