package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kandev/kandev/core/agent"
)

// DefaultSetupTimeout bounds .kandev/setup: installing dependencies can
// take minutes, a setup that waits forever must not hold the task.
const DefaultSetupTimeout = 10 * time.Minute

// maxSetupOutput is how much of the setup's output is kept (its tail).
const maxSetupOutput = 64 << 10

// SetupError is a .kandev/setup that failed, with what it printed.
type SetupError struct {
	Script string
	Output string
	Err    error
}

func (e *SetupError) Error() string {
	return fmt.Sprintf("%s failed: %v\n%s", e.Script, e.Err, e.Output)
}

func (e *SetupError) Unwrap() error { return e.Err }

// SetupScript returns the setup script for a worktree: .kandev/setup in the
// worktree (tracked, so every branch can have its own), else in the main
// checkout (untracked, a user's local habit), else "".
func SetupScript(wt Worktree) string {
	for _, dir := range []string{wt.Dir, wt.Repo} {
		p := filepath.Join(dir, ".kandev", "setup")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// RunSetup runs the worktree's setup script in the worktree, bounded by
// SetupTimeout, and returns its combined output (the last 64 KiB). No
// script is not an error. A script that is not executable, exits non-zero
// or outlives its time is a *SetupError carrying the output. The script
// runs in a group of its own with a session marker, and when it ends or
// times out its group and every process carrying the marker are killed,
// so no child, backgrounded or setsid, outlives it. Once it succeeds it is not run again for
// this worktree: a marker in the worktree's git admin directory (removed
// with the worktree) records it; runs on one worktree are serialised.
//
// With confine, the script runs where confine puts it (a confined task's
// sandbox, ADR 0065), never on the host: confine is given the script and
// the environment and returns the command that runs the script confined,
// and a cleanup to call when it ended.
func (m *Manager) RunSetup(ctx context.Context, wt Worktree, confine Confiner) (string, error) {
	script := SetupScript(wt)
	if script == "" {
		return "", nil
	}
	defer m.lock(wt.Dir)()
	marker := ""
	if gitDir, err := m.gitWT(ctx, wt, "rev-parse", "--absolute-git-dir"); err == nil {
		marker = filepath.Join(strings.TrimSpace(gitDir), SetupMarker)
		if _, err := os.Stat(marker); err == nil {
			return "", nil
		}
	}
	fi, err := os.Stat(script)
	if err != nil {
		return "", fmt.Errorf("setup: %w", err)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return "", &SetupError{Script: script, Err: errors.New("not executable (chmod +x it)")}
	}
	timeout := m.SetupTimeout
	if timeout <= 0 {
		timeout = DefaultSetupTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Marked as an agent's session is (ADR 0013), in a group of its own:
	// what it starts, setsid or backgrounded, is found and ended with it.
	session := agent.HelperMarker("setup")
	env := []string{"KANDEV_WORKTREE=" + wt.Dir, "KANDEV_REPO=" + wt.Repo,
		"KANDEV_BRANCH=" + wt.Branch, "KANDEV_BASE=" + wt.BaseCommit,
		agent.SessionEnv + "=" + session}
	name, args := script, []string(nil)
	env = append(os.Environ(), env...)
	if confine != nil {
		var cleanup func()
		name, args, env, cleanup, err = confine(script, env)
		if err != nil {
			return "", &SetupError{Script: script, Err: fmt.Errorf("confine it: %w", err)}
		}
		defer cleanup()
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = wt.Dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out := &tail{max: maxSetupOutput}
	cmd.Stdout = out
	cmd.Stderr = out
	err = cmd.Run()
	if cmd.Process != nil {
		// Finished, failed or out of time: nothing it started outlives it.
		agent.EndHelper(cmd.Process.Pid, session)
	}
	if errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success() {
		err = nil // it succeeded; a child it left held its output, and is ended
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("did not finish in %s: %w", timeout, ctx.Err())
		}
		return out.String(), &SetupError{Script: script, Output: out.String(), Err: err}
	}
	if marker != "" {
		if err := os.WriteFile(marker, nil, 0o644); err != nil {
			return out.String(), fmt.Errorf("setup: record that it ran: %w", err)
		}
	}
	return out.String(), nil
}

// Confiner turns a setup script and its environment into the command that
// runs it confined (see RunSetup).
type Confiner func(script string, env []string) (name string, args, cmdEnv []string, cleanup func(), err error)

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
	cut bool
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.cut = true
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cut {
		return "[…]" + string(t.buf)
	}
	return string(t.buf)
}
