package hosts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Remote runs one agent on a host (ADR 0053, "the remote run"): ACP over
// the stdio of an ssh session riding the host's master, the agent's
// `kandev mcp` reaching the daemon's socket through an ssh forward of that
// unix socket (never a TCP port), and the task's worktree on the host,
// pushed there by git. It is an engine Launcher for one launch.
type Remote struct {
	Pool   *Pool
	Target Target
	// Dir is the host's --dir ("" is ~/.kandev).
	Dir string
	// SelfExe and SelfHash are the daemon's own binary: copied to the
	// host by hash, it is the agent's `kandev mcp` there (and the agent
	// itself for a profile whose command is kandev).
	SelfExe, SelfHash string
	// Socket is the daemon's agents' socket (mcp.sock), forwarded.
	Socket string
	// Worktree is the task's local worktree; zero for a task without one
	// (it then runs in an empty directory of its own on the host).
	Worktree Worktree
	// RelDir is the task's directory inside its worktree ("" its root).
	RelDir string
	// Key names the task's directory on the host when it has no worktree.
	Key string
	// Command is the agent's command as the engine resolved it (the
	// daemon's own binary for the mock agent): a confined session's view
	// needs it before Launch.
	Command string
	// Setup is .worktreeinclude's files and .kandev/setup for the worktree
	// there (setup.go); nil for none. SetupOutput is the script's output
	// once Prepare ran it.
	Setup       *Setup
	SetupOutput string
	// Sandbox confines the agent on the host (sandbox.go); nil: not
	// confined.
	Sandbox *Sandbox
	// sb is the confinement Prepare found on the host for Sandbox.
	sb *hostSandbox
	// setupPath is where Prepare copied the setup script on the host.
	setupPath string

	// dir and cwd are kandev's directory on the host and the agent's
	// directory there, set by Prepare.
	dir, cwd string
	// lost: the launched session's ssh ended by itself as a lost
	// connection does (ssh's own status 255, or the client killed by a
	// signal nobody here sent), not by the agent's exit or a kill of ours.
	lost atomic.Bool
	// ended closes once the launched ssh exited and lost says why;
	// outClosed once the agent's output reached its end.
	ended, outClosed chan struct{}
}

// Lost says whether the session Launch started ended as a lost
// connection does: ssh exits 255 for its own failures (the connection
// reset, the master gone), and a local ssh killed by a signal kandev did
// not send took the session with it. The agent's own exit is its status.
func (r *Remote) Lost() bool { return r.lost.Load() }

// LostAfterExit is Lost once the session's ssh has exited, waiting for
// that at most limit: the agent's output closes with the ssh, a moment
// before its exit status is known.
// A session whose output is still open was not lost (the turn failed
// otherwise), and says so at once.
func (r *Remote) LostAfterExit(limit time.Duration) bool {
	if r.ended == nil {
		return false
	}
	select {
	case <-r.outClosed:
	case <-r.ended:
	default:
		return false
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-r.ended:
	case <-t.C:
	}
	return r.lost.Load()
}

// RunDir is kandev's directory on the host as Prepare resolved it ("" before).
func (r *Remote) RunDir() string { return r.dir }

// connectionLost says whether ssh's end is one of its own (not the remote
// command's): status 255, or killed by a signal.
func connectionLost(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return true
	}
	return ee.ExitCode() == 255
}

// Worktree is a task's local worktree as the host side needs it.
type Worktree struct {
	Repo   string // the main checkout
	Dir    string // the local worktree
	Branch string
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// RepoPath is kandev's repository on the host for a main checkout, and
// WorktreePath a task worktree's there (by its local directory, so a child
// working in its parent's worktree shares it on the host too).
func RepoPath(dir, repo string) string   { return dir + "/repos/" + shortHash(repo) + ".git" }
func WorktreePath(dir, wt string) string { return dir + "/worktrees/" + shortHash(wt) }

// prepareTimeout bounds each preparation and teardown step on a host.
const prepareTimeout = 2 * time.Minute

// lostKillTimeout bounds the teardown on the host of a session whose
// connection was lost.
const lostKillTimeout = 15 * time.Second

// prepareDir makes kandev's directories on the host and returns its
// directory as an absolute path (a forward's socket path must be one).
func (r *Remote) prepareDir(ctx context.Context) (string, error) {
	out, err := r.Pool.Script(ctx, r.Target, fmt.Sprintf(
		"d=%s\nmkdir -p \"$d/run\" \"$d/repos\" \"$d/worktrees\" \"$d/state\" && chmod 700 \"$d\" \"$d/run\" && cd \"$d\" && pwd -P\n", DirExpr(r.Dir)))
	if err != nil {
		return "", fmt.Errorf("prepare host %s: %w", r.Target.Name, err)
	}
	d := strings.TrimSpace(out)
	if !strings.HasPrefix(d, "/") {
		return "", fmt.Errorf("prepare host %s: directory %q is not absolute", r.Target.Name, d)
	}
	return d, nil
}
