package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/sandbox"
	"github.com/kandev/kandev/core/workspace"
)

// sandboxAuto is autopilot_sandbox's built-in value: bubblewrap where it
// is installed, else none (and task create says so).
const sandboxAuto = "auto"

// resolveSandbox decides a new task's sandbox, once (ADR 0048): the one
// asked for, else the stronger of its parent's and its profile's, else the
// configuration's (autopilot_sandbox on autopilot), else the built-in
// (none; on autopilot bwrap where installed). A task is never less
// confined than its parent, nor than the agent that creates it, and a
// mode this machine cannot run is refused with how to install it (on a
// host, a mode kandev cannot apply there).
func (rs *Runs) resolveSandbox(ctx context.Context, in api.CreateTaskInput, parent core.Task, prof core.Profile, host string) (string, error) {
	mode := strings.TrimSpace(in.Sandbox)
	if err := core.ValidateSandbox("task", mode); err != nil {
		return "", err
	}
	if mode == "" && parent.ID != "" {
		mode = orNoneMode(parent.Sandbox)
		if core.SandboxRank(prof.Sandbox) > core.SandboxRank(mode) {
			mode = prof.Sandbox
		}
	}
	if mode == "" {
		mode = prof.Sandbox
	}
	if mode == "" {
		key := "sandbox"
		if in.Autopilot {
			key = "autopilot_sandbox"
		}
		mode = rs.k.configValue(key)
	}
	if host != "" {
		// On a host, its bubblewrap is what counts (hostsandbox.go).
		mode = hostSandboxMode(mode, in.Autopilot)
	} else if mode == sandboxAuto || mode == "" {
		mode = core.SandboxNone
		if in.Autopilot && core.SandboxAvailable(core.SandboxBwrap) == nil {
			mode = core.SandboxBwrap
		}
	}
	if parent.ID != "" {
		if err := core.CheckChildSandbox(parent.ID, parent.Sandbox, mode); err != nil {
			return "", err
		}
	}
	if a := core.ActorFrom(ctx); a.Kind == core.ActorAgent && a.TaskID != "" && a.TaskID != parent.ID {
		if own, ok := rs.k.cached(a.TaskID); ok {
			if err := core.CheckChildSandbox(own.ID, own.Sandbox, mode); err != nil {
				return "", err
			}
		}
	}
	if err := hostSandboxErr(host, mode); err != nil {
		return "", err
	}
	if err := core.SandboxAvailable(mode); err != nil && host == "" {
		return "", err
	}
	if (mode == core.SandboxDocker || mode == core.SandboxPodman) && prof.Image == "" {
		return "", core.Errorf(core.CodeValidation, "sandbox %s needs an image and profile %s has none; kandev profile add %s --image IMAGE (docs/sandbox.md has an example Dockerfile)",
			mode, prof.Name, prof.Name)
	}
	return mode, nil
}

func orNoneMode(m string) string {
	if m == "" {
		return core.SandboxNone
	}
	return m
}

// sandboxHome is a task's private home: kept across its sessions so its
// agent's own state survives a resume, apart from every other task's.
func (rs *Runs) sandboxHome(taskID string) string {
	return filepath.Join(rs.k.opts.Home.Dir, "sandboxes", taskID, "home")
}

// launchConfined starts the run through the launcher, confined as its
// task's sandbox says.
func (rs *Runs) launchConfined(t core.Task, prof core.Profile, spec agent.Spec, h agent.Handler) (*agent.Run, error) {
	if err := rs.confine(&spec, t, prof); err != nil {
		return nil, err
	}
	return rs.k.opts.Launcher.Launch(spec, h)
}

// confine fills spec.Sandbox with what the task's session sees.
func (rs *Runs) confine(spec *agent.Spec, t core.Task, prof core.Profile) error {
	if core.SandboxRank(t.Sandbox) <= 0 {
		return nil
	}
	// The profile may run unconfined elsewhere (autopilot confines by
	// default), so its HOME is checked where it would be replaced.
	if err := core.CheckConfinedHome(prof); err != nil {
		return err
	}
	v, err := rs.sandboxView(t, prof, spec.Command, spec.SessionID, nil, serverExecutables(spec.MCPServers, rs.k.opts.SelfExe)...)
	if err != nil {
		return err
	}
	if spec.Command == rs.k.opts.SelfExe {
		// The mock agent keeps its sessions (for resume) in the task's
		// private home, the one place it may write besides the worktree.
		spec.Env = append(spec.Env, "KANDEV_MOCK_STATE_DIR="+filepath.Join(v.Home, ".local", "state", "kandev-mock"))
	}
	spec.Sandbox = &v
	return nil
}

// sandboxView is what a confined task's command sees: its worktree with
// the worktree's own git state (ADR 0065), its private home, its
// profile's paths, and readOnly besides; with the runtime of the command
// and of the executables the command starts (its MCP servers').
func (rs *Runs) sandboxView(t core.Task, prof core.Profile, command, sessionID string, readOnly []string, started ...string) (sandbox.View, error) {
	if err := core.SandboxAvailable(t.Sandbox); err != nil {
		return sandbox.View{}, err
	}
	if (t.Sandbox == core.SandboxDocker || t.Sandbox == core.SandboxPodman) && prof.Image == "" {
		return sandbox.View{}, fmt.Errorf("sandbox %s: profile %s has no image (kandev profile add %s --image IMAGE)", t.Sandbox, prof.Name, prof.Name)
	}
	opHome, err := os.UserHomeDir()
	if err != nil {
		return sandbox.View{}, fmt.Errorf("sandbox: the operator's home: %w", err)
	}
	in := sandbox.Input{Mode: t.Sandbox, Image: prof.Image, Worktree: t.CWD, PrivateHome: rs.sandboxHome(t.ID),
		OperatorHome: opHome, Paths: prof.Paths, SelfExe: rs.k.opts.SelfExe, MCPSocket: rs.k.opts.Socket,
		NoNetwork: prof.NoNetwork, Network: prof.Network, Forwards: prof.Forwards, ForwardDir: filepath.Dir(rs.k.opts.Socket),
		SessionID: sessionID, ReadOnly: readOnly}
	if command != rs.k.opts.SelfExe {
		in.Executables = []string{command}
	}
	in.Executables = append(in.Executables, started...)
	if w := t.Workspace; w != nil && w.Dir != "" && (w.Mode == core.WorkspaceWorktree || w.Mode == core.WorkspaceInherit) {
		g, err := sandbox.FindGitDirs(filepath.Join(w.Repo, ".git"), w.Dir, w.Branch)
		if err != nil {
			return sandbox.View{}, err
		}
		// Its objects, administrative directory and branch ref are its
		// own; the repository takes its commits only checked.
		p, err := rs.workspaces.ws.PreparePrivate(context.Background(), worktreeOf(w.Repo, w.Dir, w.Branch, w.Base))
		if err != nil {
			return sandbox.View{}, fmt.Errorf("sandbox: %w", err)
		}
		g.Private = &sandbox.PrivateGit{Objects: p.Objects, Shared: p.Shared, Admin: p.Admin, Refs: p.Refs, Logs: p.Logs}
		in.Git = g
		// The whole worktree is the task's, as it is unconfined, whatever
		// subdirectory (--cwd) the agent starts in; its .git file is at
		// the top.
		in.Worktree = w.Dir
	}
	if in.Git == nil {
		in.Worktree = sharedTop(t.CWD, opHome)
		in.ReadOnly = append(in.ReadOnly, sharedRepoGuards(in.Worktree)...)
	}
	v, err := sandbox.Describe(in)
	if err != nil {
		return sandbox.View{}, err
	}
	v.Dir = t.CWD
	return v, nil
}

// setupConfiner runs a confined task's .kandev/setup inside the task's
// sandbox, as its agent would run it (ADR 0065); nil for a task that is
// not confined, whose setup runs here as before.
func (rs *Runs) setupConfiner(t core.Task, prof core.Profile, sessionID string) workspace.Confiner {
	if core.SandboxRank(t.Sandbox) <= 0 {
		return nil
	}
	return func(script string, env []string) (string, []string, []string, func(), error) {
		sid := sessionID + "-setup"
		v, err := rs.sandboxView(t, prof, script, sid, []string{script})
		if err != nil {
			return "", nil, nil, nil, err
		}
		v.Dir = t.Workspace.Dir
		name, args, env := v.Command(script, nil, env)
		cleanup := func() {
			if v.Mode == core.SandboxDocker || v.Mode == core.SandboxPodman {
				agent.RemoveContainers(v.Mode, sandbox.ContainerName(sid))
			}
		}
		return name, args, env, cleanup, nil
	}
}

// sharedTop is what a shared task's sandbox makes writable: the top of
// the git checkout its directory is in (an agent started in a
// subdirectory works on the whole repository, as unconfined, and the
// repository's .git is then guarded), else the directory itself. A
// checkout at or above the operator's home (a dotfiles repository in ~)
// does not widen it: that would hand the agent the whole home.
func sharedTop(cwd, opHome string) string {
	for dir := cwd; ; {
		if st, err := os.Stat(filepath.Join(dir, ".git")); err == nil && st.IsDir() {
			if opHome != "" && (dir == opHome || strings.HasPrefix(opHome+"/", dir+"/")) {
				return cwd
			}
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return cwd
		}
		dir = parent
	}
}

// sharedRepoGuards are the parts of a git directory at or under a shared
// task's directory that run or steer the operator's own git there: the
// config (core.fsmonitor, filters, aliases), hooks, info (attributes,
// excludes) and the common directory of any worktree below.
func sharedRepoGuards(dir string) []string {
	var out []string
	for _, gd := range []string{filepath.Join(dir, ".git")} {
		if st, err := os.Stat(gd); err != nil || !st.IsDir() {
			continue
		}
		// modules holds submodules' own configs; objects/info their
		// alternates, a pointer to other stores (ADR 0065).
		for _, name := range []string{"config", "hooks", "info", "commondir", "worktrees", "modules", "objects/info"} {
			out = append(out, filepath.Join(gd, name))
		}
	}
	return out
}
