package hosts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/sandbox"
	"github.com/kandev/kandev/core/workspace"
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

// remoteMockStateEnv is the mock agent's state directory: a path under the
// daemon's home, which the remote account cannot reach; on a host it is
// under the host's --dir.
const remoteMockStateEnv = "KANDEV_MOCK_STATE_DIR"

// Launch implements the engine's Launcher: it prepares the host (binary,
// directories, worktree) and starts the agent there. It returns once the
// ssh session exists.
func (r *Remote) Launch(spec agent.Spec, h agent.Handler) (*agent.Run, error) {
	ctx, cancel := context.WithTimeout(context.Background(), prepareTimeout)
	defer cancel()
	if spec.Sandbox != nil {
		// The view is the host's (r.Sandbox), never this machine's.
		return nil, fmt.Errorf("host %s: a sandbox described on this machine cannot confine an agent on a host", r.Target.Name)
	}
	if r.cwd == "" {
		if err := r.Prepare(ctx); err != nil {
			return nil, err
		}
	}
	dir, cwd := r.dir, r.cwd
	kandev := dir + "/bin/kandev"
	sock := dir + "/run/" + spec.SessionID + ".sock"
	cmd := r.hostCommand(dir, spec.Command)
	// The agent's environment: the session's markers (a stop and the
	// sweep find its processes on the host by them), what the engine set,
	// and nothing of this machine's paths.
	env := []string{agent.SessionEnv + "=" + spec.SessionID}
	if spec.HomeID != "" {
		env = append(env, agent.HomeEnv+"="+spec.HomeID)
	}
	for _, kv := range spec.Env {
		if strings.HasPrefix(kv, remoteMockStateEnv+"=") {
			if r.sb != nil {
				continue // set below
			}
			kv = remoteMockStateEnv + "=" + dir + "/state/mock-agent"
		}
		env = append(env, kv)
	}
	if r.sb != nil && cmd == kandev {
		// Confined, the mock agent keeps its sessions (for resume) in the
		// task's private home, the one place it may write besides the
		// worktree, as it does here.
		env = append(env, remoteMockStateEnv+"="+r.sb.home+"/.local/state/kandev-mock")
	}
	var wrap []string
	if r.sb != nil {
		var err error
		if wrap, err = r.confinedCommand(spec.SessionID, sock, cwd, sandbox.EnvNames(env)); err != nil {
			return nil, err
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "cd %s && ", Quote(cwd))
	if r.Sandbox != nil && r.Sandbox.container() {
		// The container's marker: a stop and the sweep after a kill -9
		// remove the session's container through this engine.
		fmt.Fprintf(&b, ": > %s && ", Quote(containerMarker(dir, spec.SessionID, r.Sandbox.Mode)))
	}
	b.WriteString("exec env")
	for _, kv := range env {
		b.WriteString(" " + Quote(kv))
	}
	for _, a := range wrap {
		b.WriteString(" " + Quote(a))
	}
	b.WriteString(" " + Quote(cmd))
	for _, a := range spec.Args {
		b.WriteString(" " + Quote(a))
	}
	// session/new's cwd is the directory on the host.
	spec.Dir = cwd
	spec.MCPServers = remoteMCP(spec.MCPServers, r.SelfExe, kandev, sock)
	fwd := sock + ":" + r.Socket
	ssh := r.Pool.Command(context.Background(), r.Target, b.String(),
		"-T", "-o", "ExitOnForwardFailure=yes", "-R", fwd)
	// The local ssh carries the markers too: the local sweep after a
	// kill -9 of the daemon ends it as it ends a local agent.
	ssh.Env = append(os.Environ(), agent.SessionEnv+"="+spec.SessionID)
	if spec.HomeID != "" {
		ssh.Env = append(ssh.Env, agent.HomeEnv+"="+spec.HomeID)
	}
	ssh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := ssh.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	ssh.Stdout = stdoutW
	var logf *os.File
	if spec.LogPath != "" {
		if logf, err = os.OpenFile(spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
			stdoutR.Close()
			stdoutW.Close()
			return nil, err
		}
		ssh.Stderr = &capWriter{w: logf, left: agent.DefaultLogLimit}
	}
	if err := ssh.Start(); err != nil {
		stdoutR.Close()
		stdoutW.Close()
		if logf != nil {
			logf.Close()
		}
		return nil, fmt.Errorf("start ssh to host %s: %w", r.Target.Name, err)
	}
	stdoutW.Close()
	done, ended := make(chan struct{}), make(chan struct{})
	r.ended, r.outClosed = ended, make(chan struct{})
	var waitErr error
	var killOnce sync.Once
	var ours atomic.Bool // a kill of ours, not a lost connection
	kill := func() {
		killOnce.Do(func() {
			limit := prepareTimeout
			if r.lost.Load() {
				// The host may be gone: the turn's end waits on this, and
				// the engine ends what is left there once it is back.
				limit = lostKillTimeout
			}
			kctx, kcancel := context.WithTimeout(context.Background(), limit)
			defer kcancel()
			if err := r.KillSession(kctx, spec.SessionID, sock); err != nil && spec.Logger != nil {
				spec.Logger.Warn("end the session's processes on the host", "host", r.Target.Name, "err", err)
			}
			_ = syscall.Kill(-ssh.Process.Pid, syscall.SIGKILL)
			// A forward a mux client asked for stays with the master
			// until cancelled.
			_ = exec.Command(r.Pool.ssh(), r.Pool.Args(r.Target, "-O", "cancel", "-R", fwd)...).Run()
		})
	}
	go func() {
		waitErr = ssh.Wait()
		if !ours.Load() && connectionLost(waitErr) {
			r.lost.Store(true)
		}
		close(ended)
		if logf != nil {
			logf.Close()
		}
		// The agent ended (or its connection did): whatever of the
		// session is left on the host (its kandev mcp) goes with it.
		kill()
		close(done)
	}()
	// The session's pid is the local ssh's: the process of the session on
	// this machine (the agent's own pid is the host's).
	peer := agent.Peer{Stdin: stdin, Stdout: &eofReader{ReadCloser: stdoutR, eof: r.outClosed}, Done: done, PID: ssh.Process.Pid,
		Err: func() error { return waitErr }, Kill: func() { ours.Store(true); kill(); <-done }}
	return agent.Attach(spec, h, peer), nil
}

// hostCommand is the agent's command on the host: kandev's copy there for
// the daemon's own binary (the mock agent), else the profile's command,
// found on the host's PATH.
func (r *Remote) hostCommand(dir, cmd string) string {
	if cmd == r.SelfExe {
		return dir + "/bin/kandev"
	}
	return cmd
}

// Prepare readies the host for the run: kandev's binary there (copied
// by hash), its directories, and the task's worktree (pushed at its first
// run). It may take a while (a first copy of the binary, a push), so the
// engine calls it before it takes the task's lock; Launch calls it if
// nobody did.
func (r *Remote) Prepare(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, prepareTimeout)
	defer cancel()
	if _, err := EnsureBinary(ctx, r.Pool, r.Target, r.Dir, r.SelfExe, r.SelfHash); err != nil {
		return err
	}
	dir, err := r.prepareDir(ctx)
	if err != nil {
		return err
	}
	cwd, err := r.prepareWorktree(ctx, dir)
	if err != nil {
		return err
	}
	// The setup script goes to the host first, so that the sandbox's view
	// has it to mount; it then runs in that view (ADR 0065).
	if err := r.uploadSetup(ctx, dir); err != nil {
		return err
	}
	if err := r.prepareSandbox(ctx, dir, cwd, r.hostCommand(dir, r.Command)); err != nil {
		return err
	}
	if err := r.runSetup(ctx, dir, WorktreePath(dir, r.Worktree.Dir)); err != nil {
		return err
	}
	r.dir, r.cwd = dir, cwd
	return nil
}

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

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// RepoPath is kandev's repository on the host for a main checkout, and
// WorktreePath a task worktree's there (by its local directory, so a child
// working in its parent's worktree shares it on the host too).
func RepoPath(dir, repo string) string   { return dir + "/repos/" + shortHash(repo) + ".git" }
func WorktreePath(dir, wt string) string { return dir + "/worktrees/" + shortHash(wt) }

// prepareWorktree gives the task its directory on the host: for a task
// with a worktree, its branch pushed to kandev's repository there and a
// worktree of it (once: a later run continues in the same one). It returns
// the directory the agent starts in.
func (r *Remote) prepareWorktree(ctx context.Context, dir string) (string, error) {
	if r.Worktree.Dir == "" {
		d := dir + "/worktrees/task-" + shortHash(r.Key)
		if _, err := r.Pool.Script(ctx, r.Target, "mkdir -p "+Quote(d)+"\n"); err != nil {
			return "", err
		}
		return d, nil
	}
	repo, wt := RepoPath(dir, r.Worktree.Repo), WorktreePath(dir, r.Worktree.Dir)
	out, err := r.Pool.Script(ctx, r.Target, fmt.Sprintf(`r=%s; w=%s
[ -d "$r" ] || git init -q --bare "$r" || exit 1
if [ -e "$w/.git" ]; then echo have; fi
`, Quote(repo), Quote(wt)))
	if err != nil {
		return "", fmt.Errorf("repository on host %s: %w", r.Target.Name, err)
	}
	if strings.TrimSpace(out) != "have" {
		ref := "refs/heads/" + r.Worktree.Branch
		if err := r.git(ctx, r.Worktree.Dir, "push", "-q", "--force", r.url(repo), "HEAD:"+ref); err != nil {
			return "", err
		}
		if _, err := r.Pool.Script(ctx, r.Target, fmt.Sprintf("git --git-dir=%s worktree add -q %s %s\n",
			Quote(repo), Quote(wt), Quote(r.Worktree.Branch))); err != nil {
			return "", fmt.Errorf("worktree on host %s: %w", r.Target.Name, err)
		}
		if err := r.copyIncluded(ctx, wt); err != nil {
			return "", err
		}
	}
	if r.RelDir != "" && r.RelDir != "." {
		wt = path.Join(wt, filepath.ToSlash(r.RelDir))
		if _, err := r.Pool.Script(ctx, r.Target, "mkdir -p "+Quote(wt)+"\n"); err != nil {
			return "", err
		}
	}
	return wt, nil
}

// url is the host repository's address for git over ssh.
func (r *Remote) url(p string) string {
	u := "ssh://" + r.Target.Dest.String()
	if r.Target.Dest.Port != 0 {
		u += fmt.Sprintf(":%d", r.Target.Dest.Port)
	}
	return u + p
}

// git runs git in the task's local worktree, through kandev's one runner
// (ADR 0065), with its ssh riding the host's master: a push to or fetch
// from the host's repository, whose objects the fetch checks.
func (r *Remote) git(ctx context.Context, dir string, args ...string) error {
	_, err := workspace.Git(ctx, workspace.GitCall{Dir: dir, Remote: true, Args: args,
		Env: append(r.localEnv(), "GIT_SSH_COMMAND="+r.sshCommand(), "GIT_SSH_VARIANT=ssh")})
	if err != nil {
		return fmt.Errorf("git %s (host %s): %w", args[0], r.Target.Name, err)
	}
	return nil
}

// localEnv names the local worktree's real git directories (ADR 0049).
func (r *Remote) localEnv() []string {
	return workspace.WorktreeEnv(workspace.Worktree{Repo: r.Worktree.Repo, Dir: r.Worktree.Dir})
}

// sshCommand is GIT_SSH_COMMAND: the pool's ssh line over the master
// (git appends the destination, and -p for a port in the URL).
func (r *Remote) sshCommand() string {
	a := []string{Quote(r.Pool.ssh())}
	if r.Pool.Config != "" {
		a = append(a, "-F", Quote(r.Pool.Config))
	}
	a = append(a, "-o", Quote("ControlPath="+r.Pool.ControlPath(r.Target.Name)), "-o", "ControlMaster=no", "-o", "BatchMode=yes")
	if r.Target.Identity != "" {
		a = append(a, "-i", Quote(r.Target.Identity), "-o", "IdentitiesOnly=yes")
	}
	return strings.Join(a, " ")
}

// FetchBack brings the host's worktree into the local one, so diff, merge
// and discard see in the main checkout what the agent did on the host: the
// branch's commits there and its uncommitted changes (a snapshot commit
// made on the host with a private index, the host's worktree untouched).
// The local worktree then holds the host's: branch at the host's head,
// files as on the host. A task not yet run on the host has nothing there.
func (r *Remote) FetchBack(ctx context.Context) error {
	if r.Worktree.Dir == "" {
		return nil
	}
	dir, err := r.prepareDir(ctx)
	if err != nil {
		return err
	}
	repo, wt := RepoPath(dir, r.Worktree.Repo), WorktreePath(dir, r.Worktree.Dir)
	ref := "refs/kandev/snapshot/" + shortHash(r.Worktree.Dir)
	out, err := r.Pool.Script(ctx, r.Target, fmt.Sprintf(`w=%s
[ -e "$w/.git" ] || exit 0
cd "$w" || exit 1
export GIT_INDEX_FILE="$(git rev-parse --absolute-git-dir)/kandev-snapshot.index"
export GIT_AUTHOR_NAME=kandev GIT_AUTHOR_EMAIL=kandev@localhost GIT_COMMITTER_NAME=kandev GIT_COMMITTER_EMAIL=kandev@localhost
rm -f "$GIT_INDEX_FILE"
git read-tree HEAD && git add -A && t=$(git write-tree) && c=$(git commit-tree "$t" -p HEAD -m 'kandev: the worktree on host') && git update-ref %s "$c" || exit 1
rm -f "$GIT_INDEX_FILE"
echo "$c"
`, Quote(wt), Quote(ref)))
	if err != nil {
		return fmt.Errorf("snapshot the worktree on host %s: %w", r.Target.Name, err)
	}
	snap := strings.TrimSpace(out)
	if snap == "" {
		return nil
	}
	if err := r.git(ctx, r.Worktree.Dir, "fetch", "-q", "--no-tags", r.url(repo), ref); err != nil {
		return err
	}
	// Branch at the host's head, the working tree at the snapshot, the
	// index back at the head: the host's state, uncommitted as it was.
	for _, args := range [][]string{{"reset", "-q", "--hard", snap + "^"}, {"read-tree", "-u", "--reset", snap}, {"reset", "-q"}} {
		if _, err := workspace.Git(ctx, workspace.GitCall{Dir: r.Worktree.Dir, Env: r.localEnv(), Args: args}); err != nil {
			return err
		}
	}
	return nil
}

// remoteMCP points the kandev MCP server at the host's copy of kandev and
// the forwarded socket; the token stays as it is.
func remoteMCP(servers []acp.McpServer, selfExe, kandev, sock string) []acp.McpServer {
	out := make([]acp.McpServer, 0, len(servers))
	for _, s := range servers {
		if s.Stdio != nil && s.Stdio.Command == selfExe {
			c := *s.Stdio
			c.Command = kandev
			c.Env = make([]acp.EnvVariable, 0, len(s.Stdio.Env))
			for _, e := range s.Stdio.Env {
				if e.Name == "KANDEV_SOCKET" {
					e.Value = sock
				}
				c.Env = append(c.Env, e)
			}
			s = acp.McpServer{Stdio: &c}
		}
		out = append(out, s)
	}
	return out
}

// killScript SIGKILLs, as the remote account, every process whose
// environment carries the session's marker (found in /proc, as
// agent.SessionProcs does locally; never pkill -f, which matches command
// lines), waits until none is left, and removes the session's socket.
const killScript = `m=%s; s=%s
found() {
  for e in /proc/[0-9]*/environ; do
    p=${e#/proc/}; p=${p%%/environ}
    [ "$p" = "$$" ] && continue
    if tr '\0' '\n' < "$e" 2>/dev/null | grep -qxF "$m"; then echo "$p"; fi
  done
}
i=0
while :; do
  ps=$(found)
  [ -z "$ps" ] && break
  [ $i -ge 100 ] && { echo "left: $ps" >&2; exit 1; }
  kill -KILL $ps 2>/dev/null
  i=$((i+1)); sleep 0.05
done
rm -f "$s"
`

// KillSession ends every process of the session on the host, and
// removes its container there first (a SIGKILLed docker client leaves
// its container running).
func (r *Remote) KillSession(ctx context.Context, sessionID, sock string) error {
	if sessionID == "" {
		return errors.New("no session id")
	}
	script := fmt.Sprintf(killScript, Quote(agent.SessionEnv+"="+sessionID), Quote(sock))
	if r.dir != "" {
		script = fmt.Sprintf(removeContainersScript, Quote(r.dir), Quote(sessionID)) + script
	}
	_, err := r.Pool.Script(ctx, r.Target, script)
	return err
}

// capWriter writes to w until left bytes are used, then drops the rest:
// a flooding agent on a host cannot fill the daemon's disk.
type capWriter struct {
	w    io.Writer
	left int64
}

func (c *capWriter) Write(p []byte) (int, error) {
	n := len(p)
	if c.left <= 0 {
		return n, nil
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	m, err := c.w.Write(p)
	c.left -= int64(m)
	if err != nil {
		return m, err
	}
	return n, nil
}

// sweepScript is killScript for sessions an earlier daemon left running
// (killed with -9 before its teardown): for each session id, every
// process marked with it is SIGKILLed until none is left and the session's
// socket in DIR/run is removed; it prints how many processes it killed.
const sweepScript = `d=%s
found() {
  for e in /proc/[0-9]*/environ; do
    p=${e#/proc/}; p=${p%%/environ}
    [ "$p" = "$$" ] && continue
    if tr '\0' '\n' < "$e" 2>/dev/null | grep -qxF "$1"; then echo "$p"; fi
  done
}
n=0
for sid in %s; do
  %s
  i=0
  while :; do
    ps=$(found "%s=$sid")
    [ -z "$ps" ] && break
    [ $i -ge 100 ] && { echo "left: $ps" >&2; exit 1; }
    [ $i -eq 0 ] && for p in $ps; do n=$((n+1)); done
    kill -KILL $ps 2>/dev/null
    i=$((i+1)); sleep 0.05
  done
  rm -f "$d/run/$sid.sock"
done
echo "$n"
`

// SweepSessions ends on the host every process of the given sessions (by
// their marker, as KillSession does) and removes their sockets: the part
// on the host of the startup sweep after a daemon died without its
// teardown (ADR 0013 locally). It returns how many processes it killed.
func SweepSessions(ctx context.Context, p *Pool, t Target, dir string, sessionIDs []string) (int, error) {
	if len(sessionIDs) == 0 {
		return 0, nil
	}
	q := make([]string, len(sessionIDs))
	for i, id := range sessionIDs {
		q[i] = Quote(id)
	}
	out, err := p.Script(ctx, t, fmt.Sprintf(sweepScript, DirExpr(dir), strings.Join(q, " "), removeContainersLoop, agent.SessionEnv))
	if err != nil {
		return 0, err
	}
	var n int
	if _, err := fmt.Sscan(strings.TrimSpace(out), &n); err != nil {
		return 0, fmt.Errorf("sweep host %s: unexpected output %q", t.Name, out)
	}
	return n, nil
}

// eofReader closes eof once a read returns an error (the end of the
// agent's output, or its pipe closed).
type eofReader struct {
	io.ReadCloser
	eof  chan struct{}
	once sync.Once
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.ReadCloser.Read(p)
	if err != nil {
		e.once.Do(func() { close(e.eof) })
	}
	return n, err
}
