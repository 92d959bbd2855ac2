package hosts

import (
	"context"
	"fmt"
	"strings"

	"github.com/kandev/kandev/core/sandbox"
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
	// Network is the profile's network mode (sandbox.NetworkNone, …).
	Network string
	// Image is a container's image (docker, podman), which must already
	// be on the host: kandev never pulls.
	Image string
	// Servers are the commands of the profile's own MCP servers, which
	// the agent starts inside the sandbox: each one found on the host's
	// PATH has its runtime shown, as the agent's command has (ADR 0078).
	Servers []string
}

// container says whether the sandbox is a container on the host.
func (sb *Sandbox) container() bool { return sb.Mode == "docker" || sb.Mode == "podman" }

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
	// keepID: a rootless podman, whose --user is inside the account's
	// user namespace; keep-id maps it to the account itself, the owner
	// of the worktree and the private home.
	keepID bool
}

// prepareSandbox finds on the host what the session's view needs: the
// remote account's home, bubblewrap working there, the agent's command on
// the host's PATH and the runtime it runs from, the git directories of
// kandev's repository there that the task's worktree needs, and the task's
// private home (made). The task's .kandev/setup runs in the same view
// (runSetup), never on the host outside its sandbox (ADR 0065).
func (r *Remote) prepareSandbox(ctx context.Context, dir, cwd, command string) error {
	if r.Sandbox == nil {
		return nil
	}
	user, keepID, err := r.sandboxUser(ctx)
	if err != nil {
		return err
	}
	run := func(ctx context.Context, script string) (string, error) { return r.Pool.Script(ctx, r.Target, script) }
	fs := newProbeFS()
	hs := &hostSandbox{fs: fs}
	err = fs.settle(ctx, run, func() error {
		// Asked together, so one round answers them all; an error of a
		// round with questions still open is thrown away.
		a := r.askSandbox(fs, dir, command)
		// Describe asks its own questions in the same round, with what is
		// known so far.
		var in sandbox.Input
		var derr error
		if a.absHome() {
			in, derr = r.sandboxInput(fs, a, dir, cwd, user)
		}
		if err := r.sandboxRefusal(a, command); err != nil {
			return err
		}
		if derr != nil {
			return derr
		}
		hs.home, hs.in, hs.keepID = a.home, in, keepID
		return nil
	})
	if err != nil {
		return err
	}
	r.sb = hs
	return nil
}

// sandboxUser is the container's user for a container sandbox (the remote
// account's UID:GID, and whether the engine is a rootless podman), after
// checking its engine; nothing for bubblewrap. Any other mode kandev
// cannot give on a host.
func (r *Remote) sandboxUser(ctx context.Context) (string, bool, error) {
	sb := r.Sandbox
	switch {
	case sb.container():
		return r.prepareEngine(ctx)
	case sb.Mode != "bwrap":
		return "", false, &SandboxError{Host: r.Target.Name, Mode: sb.Mode, Msg: "kandev cannot give this sandbox on a host (docs/hosts.md)"}
	}
	return "", false, nil
}

// sandboxAnswers are the host's answers to what prepareSandbox asks of it.
type sandboxAnswers struct {
	// home is the remote account's HOME, if homeOK.
	home   string
	homeOK bool
	// bwrapErr: bubblewrap is not on the PATH; bwrapOK: it makes its
	// namespaces (else bwrapMsg says why not). Not asked for a container.
	bwrapErr error
	bwrapOK  bool
	bwrapMsg string
	// exe is the agent's command as found on the PATH.
	exe    string
	exeErr error
	// servers are the MCP servers' commands found on the PATH; one not
	// found is the agent's to fail on, as unconfined.
	servers []string
	// git is the git directories the task's worktree needs (nil for a
	// task without one).
	git    *sandbox.GitDirs
	gitErr error
}

// absHome says whether the remote account's HOME is an absolute path,
// which the view needs.
func (a sandboxAnswers) absHome() bool { return a.homeOK && strings.HasPrefix(a.home, "/") }

// askSandbox asks the host, through fs, what the view needs.
func (r *Remote) askSandbox(fs *probeFS, dir, command string) sandboxAnswers {
	var a sandboxAnswers
	a.home, a.homeOK = fs.Getenv("HOME")
	a.bwrapOK = true
	if !r.Sandbox.container() {
		_, a.bwrapErr = fs.LookPath("bwrap")
		a.bwrapOK, a.bwrapMsg = fs.BwrapWorks()
	}
	a.exe = command
	if !strings.HasPrefix(a.exe, "/") {
		a.exe, a.exeErr = fs.LookPath(command)
	}
	for _, c := range r.Sandbox.Servers {
		if p, err := fs.LookPath(c); err == nil {
			a.servers = append(a.servers, p)
		}
	}
	if r.Worktree.Dir != "" {
		a.git, a.gitErr = sandbox.FindGitDirsFS(fs, RepoPath(dir, r.Worktree.Repo), WorktreePath(dir, r.Worktree.Dir), r.Worktree.Branch)
	}
	return a
}

// sandboxInput is the view's input on the host from the answers so far,
// described once (with a socket of no session) so that Describe's own
// questions are asked in the same round; the error is Describe's.
func (r *Remote) sandboxInput(fs *probeFS, a sandboxAnswers, dir, cwd, user string) (sandbox.Input, error) {
	sb := r.Sandbox
	in := sandbox.Input{Mode: sb.Mode, Worktree: cwd, PrivateHome: dir + "/sandboxes/" + sb.TaskID + "/home",
		OperatorHome: a.home, Paths: sb.Paths, SelfExe: dir + "/bin/kandev", NoNetwork: sb.NoNetwork, Network: sb.Network, FS: fs,
		Image: sb.Image, User: user}
	if a.exeErr == nil && a.exe != dir+"/bin/kandev" {
		in.Executables = []string{a.exe}
	}
	in.Executables = append(in.Executables, a.servers...)
	if a.git != nil {
		in.Git, in.Worktree = a.git, WorktreePath(dir, r.Worktree.Dir)
	}
	// The setup script copied to the host runs in this view too
	// (ADR 0065): it is mounted read-only.
	if r.setupPath != "" {
		in.ReadOnly = []string{r.setupPath}
	}
	// The session's socket is named per session: Launch describes
	// the view again with it, from the same answers.
	in.MCPSocket = dir + "/run/probe.sock"
	_, err := sandbox.Describe(in)
	in.MCPSocket = ""
	return in, err
}

// sandboxRefusal is why the host cannot give the sandbox, from its
// answers; nil when it can.
func (r *Remote) sandboxRefusal(a sandboxAnswers, command string) error {
	sb := r.Sandbox
	refuse := func(msg string) error { return &SandboxError{Host: r.Target.Name, Mode: sb.Mode, Msg: msg} }
	switch {
	case !a.absHome():
		return refuse(fmt.Sprintf("the remote account's HOME %q is not an absolute path", a.home))
	case a.bwrapErr != nil:
		return refuse("bubblewrap is not installed there (kandev host check says what the host has); install it there (apt-get install bubblewrap) or pick --sandbox none")
	case !a.bwrapOK:
		return refuse("bubblewrap cannot make its namespaces there: " + strings.TrimSpace(a.bwrapMsg))
	case a.exeErr != nil && !sb.container():
		// A container's image may bring the command itself.
		return refuse(fmt.Sprintf("the agent's command %s is not on the remote account's PATH", command))
	}
	return a.gitErr
}

// engineScript checks, as the remote account, that the container engine
// answers and has the image, and prints the account's UID:GID: the
// engine is the account's own (its DOCKER_HOST, CONTAINER_HOST or
// context, as ssh's session gives it), never one kandev picks.
const engineScript = `e=%s; img=%s
command -v "$e" >/dev/null 2>&1 || { echo nocommand; exit 0; }
if ! o=$("$e" info 2>&1 >/dev/null); then echo noengine; printf '%%s\n' "$o" | tail -n 3; exit 0; fi
if ! o=$("$e" image inspect "$img" 2>&1 >/dev/null); then echo noimage; printf '%%s\n' "$o" | tail -n 3; exit 0; fi
r=false
[ "$e" = podman ] && r=$("$e" info --format '{{.Host.Security.Rootless}}' 2>/dev/null)
echo "ok $(id -u):$(id -g) $r"
`

// prepareEngine checks the host's container engine for the sandbox: it
// answers the remote account, and the profile's image is there (kandev
// never pulls). It returns the account's UID:GID, the container's user,
// and whether the engine is a rootless podman.
func (r *Remote) prepareEngine(ctx context.Context) (string, bool, error) {
	sb := r.Sandbox
	fail := func(msg string) error { return &SandboxError{Host: r.Target.Name, Mode: sb.Mode, Msg: msg} }
	if sb.Image == "" {
		return "", false, fail("the profile has no image")
	}
	out, err := r.Pool.Script(ctx, r.Target, fmt.Sprintf(engineScript, Quote(sb.Mode), Quote(sb.Image)))
	if err != nil {
		return "", false, err
	}
	first, rest, _ := strings.Cut(strings.TrimSpace(out), "\n")
	rest = strings.TrimSpace(rest)
	switch {
	case first == "nocommand":
		return "", false, fail(sb.Mode + " is not installed there (kandev host check says what the host has)")
	case first == "noengine":
		return "", false, fail(fmt.Sprintf("%s info fails as the remote account (give that account the engine: its group, or DOCKER_HOST/CONTAINER_HOST or a docker context there; docs/hosts.md): %s", sb.Mode, rest))
	case first == "noimage":
		return "", false, fail(fmt.Sprintf("image %s is not on the host (build or load it there; kandev never pulls): %s", sb.Image, rest))
	case strings.HasPrefix(first, "ok "):
		f := strings.Fields(first)
		if len(f) >= 2 {
			return f[1], len(f) == 3 && f[2] == "true", nil
		}
	}
	return "", false, fail(fmt.Sprintf("unexpected answer %q", out))
}

// confinedCommand is the agent's command line inside bubblewrap on the
// host, for the session whose forwarded socket is sock: bwrap's
// arguments (the view, then "--") before the agent's command.
func (r *Remote) confinedCommand(sessionID, sock, cwd string, envNames []string) ([]string, error) {
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
	if r.Sandbox.container() {
		// docker run -i: ACP over the container's stdio, which is the ssh
		// session's; the environment reaches the agent by name.
		args := v.ContainerArgs(envNames)
		if r.sb.keepID {
			args = append([]string{args[0], "--userns=keep-id"}, args[1:]...)
		}
		return append([]string{r.Sandbox.Mode}, args...), nil
	}
	return append([]string{"bwrap"}, v.BwrapArgs()...), nil
}

// confinedSetup is confinedCommand for the task's setup script: the same
// view without kandev's socket, under a session id of its own (a
// container's name).
func (r *Remote) confinedSetup(sessionID, cwd string, envNames []string) ([]string, error) {
	return r.confinedCommand(sessionID, "", cwd, envNames)
}

// containerMarker is the file in kandev's run directory on the host that
// says a session's agent ran in a container of engine: stop and the
// sweep ask only the engine a session used (a host's podman, never used,
// is never started by a sweep).
func containerMarker(dir, sessionID, engine string) string {
	return dir + "/run/" + sessionID + "." + engine
}

// removeContainersLoop removes, in kandev's directory $d on the host, the
// containers of session $sid (by its label) through each engine whose
// marker is there, then the marker; a failure is left for the next sweep.
const removeContainersLoop = `for e in docker podman; do
    [ -e "$d/run/$sid.$e" ] || continue
    ids=$("$e" ps --all --quiet --filter "label=kandev.session=$sid" 2>/dev/null) || continue
    [ -z "$ids" ] || "$e" rm --force $ids >/dev/null 2>&1 || continue
    rm -f "$d/run/$sid.$e"
  done`

// removeContainersScript is removeContainersLoop for one session, before
// killScript.
const removeContainersScript = "d=%s; sid=%s\n" + removeContainersLoop + "\n"
