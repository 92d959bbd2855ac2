package hosts

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/sandbox"
)

// remoteMockStateEnv is the mock agent's state directory: a path under the
// daemon's home, which the remote account cannot reach; on a host it is
// under the host's --dir.
const remoteMockStateEnv = "KANDEV_MOCK_STATE_DIR"

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
	sock := r.dir + "/run/" + spec.SessionID + ".sock"
	line, err := r.agentLine(spec, sock)
	if err != nil {
		return nil, err
	}
	// session/new's cwd is the directory on the host.
	spec.Dir = r.cwd
	spec.MCPServers = remoteMCP(spec.MCPServers, r.SelfExe, r.dir+"/bin/kandev", sock)
	s := &remoteSession{r: r, spec: spec, sock: sock, fwd: sock + ":" + r.Socket}
	stdin, stdout, err := s.start(line)
	if err != nil {
		return nil, err
	}
	r.ended, r.outClosed = s.ended, make(chan struct{})
	go s.wait()
	// The session's pid is the local ssh's: the process of the session on
	// this machine (the agent's own pid is the host's).
	peer := agent.Peer{Stdin: stdin, Stdout: &eofReader{ReadCloser: stdout, eof: r.outClosed}, Done: s.done, PID: s.ssh.Process.Pid,
		Err: func() error { return s.waitErr }, Kill: s.stop}
	return agent.Attach(spec, h, peer), nil
}

// agentLine is the shell line the session's ssh runs on the host: the
// agent's command in its directory there, with its environment, inside
// its sandbox when it is confined.
func (r *Remote) agentLine(spec agent.Spec, sock string) (string, error) {
	dir, cwd := r.dir, r.cwd
	cmd := r.hostCommand(dir, spec.Command)
	env := r.agentEnv(spec, cmd)
	var wrap []string
	if r.sb != nil {
		var err error
		if wrap, err = r.confinedCommand(spec.SessionID, sock, cwd, sandbox.EnvNames(env)); err != nil {
			return "", err
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
	return b.String(), nil
}

// agentEnv is the agent's environment on the host, for its command cmd
// there: the session's markers (a stop and the sweep find its processes
// on the host by them), what the engine set, and nothing of this
// machine's paths.
func (r *Remote) agentEnv(spec agent.Spec, cmd string) []string {
	dir := r.dir
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
	if r.sb != nil && cmd == dir+"/bin/kandev" {
		// Confined, the mock agent keeps its sessions (for resume) in the
		// task's private home, the one place it may write besides the
		// worktree, as it does here.
		env = append(env, remoteMockStateEnv+"="+r.sb.home+"/.local/state/kandev-mock")
	}
	return env
}

// remoteSession is the local side of an agent launched on a host: the
// ssh that carries it, and its end.
type remoteSession struct {
	r    *Remote
	spec agent.Spec
	// sock is the session's socket on the host; fwd forwards it to the
	// daemon's.
	sock, fwd string
	ssh       *exec.Cmd
	// logf is the session's log (nil: none), closed when the ssh exits.
	logf *os.File
	// ended closes once the ssh exited (waitErr says how, and Remote.lost
	// whether as a lost connection does); done once what was left of the
	// session is ended too.
	ended, done chan struct{}
	waitErr     error
	killOnce    sync.Once
	ours        atomic.Bool // a kill of ours, not a lost connection
}

// start starts the session's ssh, running line on the host with the
// session's socket forwarded, and returns the agent's stdin and stdout.
func (s *remoteSession) start(line string) (io.WriteCloser, *os.File, error) {
	r, spec := s.r, s.spec
	ssh := r.Pool.Command(context.Background(), r.Target, line,
		"-T", "-o", "ExitOnForwardFailure=yes", "-R", s.fwd)
	// The local ssh carries the markers too: the local sweep after a
	// kill -9 of the daemon ends it as it ends a local agent.
	ssh.Env = append(os.Environ(), agent.SessionEnv+"="+spec.SessionID)
	if spec.HomeID != "" {
		ssh.Env = append(ssh.Env, agent.HomeEnv+"="+spec.HomeID)
	}
	ssh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := ssh.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	ssh.Stdout = stdoutW
	if spec.LogPath != "" {
		if s.logf, err = os.OpenFile(spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
			stdoutR.Close()
			stdoutW.Close()
			return nil, nil, err
		}
		ssh.Stderr = &capWriter{w: s.logf, left: agent.DefaultLogLimit}
	}
	if err := ssh.Start(); err != nil {
		stdoutR.Close()
		stdoutW.Close()
		if s.logf != nil {
			s.logf.Close()
		}
		return nil, nil, fmt.Errorf("start ssh to host %s: %w", r.Target.Name, err)
	}
	stdoutW.Close()
	s.ssh = ssh
	s.ended, s.done = make(chan struct{}), make(chan struct{})
	return stdin, stdoutR, nil
}

// wait waits for the session's ssh to exit and then ends what is left of
// the session.
func (s *remoteSession) wait() {
	s.waitErr = s.ssh.Wait()
	if !s.ours.Load() && connectionLost(s.waitErr) {
		s.r.lost.Store(true)
	}
	close(s.ended)
	if s.logf != nil {
		s.logf.Close()
	}
	// The agent ended (or its connection did): whatever of the
	// session is left on the host (its kandev mcp) goes with it.
	s.kill()
	close(s.done)
}

// stop is the peer's Kill: a kill of ours, not a lost connection, which
// returns once the session has ended.
func (s *remoteSession) stop() {
	s.ours.Store(true)
	s.kill()
	<-s.done
}

// kill ends the session, once: its processes on the host, the local
// ssh's group, and its forward.
func (s *remoteSession) kill() {
	s.killOnce.Do(func() {
		r, spec := s.r, s.spec
		limit := prepareTimeout
		if r.lost.Load() {
			// The host may be gone: the turn's end waits on this, and
			// the engine ends what is left there once it is back.
			limit = lostKillTimeout
		}
		kctx, kcancel := context.WithTimeout(context.Background(), limit)
		defer kcancel()
		if err := r.KillSession(kctx, spec.SessionID, s.sock); err != nil && spec.Logger != nil {
			spec.Logger.Warn("end the session's processes on the host", "host", r.Target.Name, "err", err)
		}
		_ = syscall.Kill(-s.ssh.Process.Pid, syscall.SIGKILL)
		// A forward a mux client asked for stays with the master
		// until cancelled.
		_ = exec.Command(r.Pool.ssh(), r.Pool.Args(r.Target, "-O", "cancel", "-R", s.fwd)...).Run()
	})
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
