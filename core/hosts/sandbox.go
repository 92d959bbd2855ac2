package hosts

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/kandev/kandev/core/sandbox"
	"github.com/kandev/kandev/core/workspace"
)

// Sandbox is how a task's agent is confined on its host (docs/hosts.md,
// "Sandboxes"): bubblewrap there, with the view core/sandbox describes,
// built from the host's own paths.
type Sandbox struct {
	Mode string
	// TaskID names the task's private home on the host
	// (DIR/sandboxes/TASK/home), kept across its sessions.
	TaskID string
	// Paths are the profile's declared paths ("~/.claude", "ro:~/.x"),
	// at the remote account's home.
	Paths     []string
	NoNetwork bool
}

// SandboxError is a sandbox the host cannot give: the run fails (and
// climbs) rather than start the agent less confined.
type SandboxError struct {
	Host, Mode, Msg string
}

func (e *SandboxError) Error() string {
	return fmt.Sprintf("sandbox %s on host %s: %s", e.Mode, e.Host, e.Msg)
}

// hostSandbox is what prepareSandbox found: the view's input, answered by
// the host, and the remote account's home.
type hostSandbox struct {
	fs   *probeFS
	in   sandbox.Input
	home string
}

// prepareSandbox finds on the host what the session's view needs: the
// remote account's home, bubblewrap working there, the agent's command on
// the host's PATH and the runtime it runs from, the git directories of
// kandev's repository there that the task's worktree needs, and the task's
// private home (made). The engine's setup marker is made in the worktree's
// administrative directory there and mounted read-only, so a .kandev/setup
// the confined agent writes never runs on the host outside its sandbox.
func (r *Remote) prepareSandbox(ctx context.Context, dir, cwd, command string) error {
	sb := r.Sandbox
	if sb == nil {
		return nil
	}
	if sb.Mode != "bwrap" {
		return &SandboxError{Host: r.Target.Name, Mode: sb.Mode, Msg: "kandev runs containers on this machine only, not on hosts (docs/hosts.md); use --sandbox bwrap or run it here (--host local)"}
	}
	run := func(ctx context.Context, script string) (string, error) { return r.Pool.Script(ctx, r.Target, script) }
	fs := newProbeFS()
	hs := &hostSandbox{fs: fs}
	err := fs.settle(ctx, run, func() error {
		// Asked together, so one round answers them all; an error of a
		// round with questions still open is thrown away.
		home, homeOK := fs.Getenv("HOME")
		_, bwrapErr := fs.LookPath("bwrap")
		bwrapOK, bwrapMsg := fs.BwrapWorks()
		exe, exeErr := command, error(nil)
		if !strings.HasPrefix(exe, "/") {
			exe, exeErr = fs.LookPath(command)
		}
		var g *sandbox.GitDirs
		var gitErr error
		if r.Worktree.Dir != "" {
			g, gitErr = sandbox.FindGitDirsFS(fs, RepoPath(dir, r.Worktree.Repo), WorktreePath(dir, r.Worktree.Dir), r.Worktree.Branch)
		}
		// Describe asks its own questions in the same round, with what is
		// known so far.
		var in sandbox.Input
		var derr error
		if homeOK && strings.HasPrefix(home, "/") {
			in = sandbox.Input{Mode: sb.Mode, Worktree: cwd, PrivateHome: dir + "/sandboxes/" + sb.TaskID + "/home",
				OperatorHome: home, Paths: sb.Paths, SelfExe: dir + "/bin/kandev", NoNetwork: sb.NoNetwork, FS: fs}
			if exeErr == nil && exe != dir+"/bin/kandev" {
				in.Executables = []string{exe}
			}
			if g != nil {
				derr = fs.Touch(path.Join(g.Admin, workspace.SetupMarker))
				g.Protect = append(g.Protect, workspace.SetupMarker)
				in.Git, in.Worktree = g, WorktreePath(dir, r.Worktree.Dir)
			}
			// The session's socket is named per session: Launch describes
			// the view again with it, from the same answers.
			in.MCPSocket = dir + "/run/probe.sock"
			if _, err := sandbox.Describe(in); derr == nil {
				derr = err
			}
			in.MCPSocket = ""
		}
		switch {
		case !homeOK || !strings.HasPrefix(home, "/"):
			return &SandboxError{Host: r.Target.Name, Mode: sb.Mode, Msg: fmt.Sprintf("the remote account's HOME %q is not an absolute path", home)}
		case bwrapErr != nil:
			return &SandboxError{Host: r.Target.Name, Mode: sb.Mode, Msg: "bubblewrap is not installed there (kandev host check says what the host has); install it there (apt-get install bubblewrap) or pick --sandbox none"}
		case !bwrapOK:
			return &SandboxError{Host: r.Target.Name, Mode: sb.Mode, Msg: "bubblewrap cannot make its namespaces there: " + strings.TrimSpace(bwrapMsg)}
		case exeErr != nil:
			return &SandboxError{Host: r.Target.Name, Mode: sb.Mode, Msg: fmt.Sprintf("the agent's command %s is not on the remote account's PATH", command)}
		case gitErr != nil:
			return gitErr
		case derr != nil:
			return derr
		}
		hs.home, hs.in = home, in
		return nil
	})
	if err != nil {
		return err
	}
	r.sb = hs
	return nil
}

// confinedCommand is the agent's command line inside bubblewrap on the
// host, for the session whose forwarded socket is sock: bwrap's
// arguments (the view, then "--") before the agent's command.
func (r *Remote) confinedCommand(sessionID, sock, cwd string) ([]string, error) {
	in := r.sb.in
	in.MCPSocket, in.SessionID = sock, sessionID
	v, err := sandbox.Describe(in)
	if err != nil {
		return nil, err
	}
	if r.sb.fs.pending() {
		return nil, fmt.Errorf("sandbox on host %s: the view asked what the host was not asked", r.Target.Name)
	}
	v.Dir = cwd
	return append([]string{"bwrap"}, v.BwrapArgs()...), nil
}
