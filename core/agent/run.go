// Package agent runs one agent CLI as a child process and speaks the Agent
// Client Protocol to it: spawn in its own process group, initialize, open or
// resume a session with the kandev MCP server injected, run prompt turns,
// cancel, and tear the process group down.
package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kandev/kandev/core/sandbox"
)

// Spec says what to run and how to reach kandev from inside it.
type Spec struct {
	Command string
	Args    []string
	// Env is added to the daemon's environment (KEY=VALUE).
	Env []string
	Dir string
	// LogPath receives the agent's stderr. The file is rotated once it
	// reaches LogLimit (to LogPath+".1", replacing an older one), so a
	// flooding agent keeps at most twice LogLimit on disk.
	LogPath string
	// LogLimit caps each generation of the stderr log; zero means
	// DefaultLogLimit.
	LogLimit int64
	// MCPServers are injected through session/new (or resume/load).
	MCPServers []acp.McpServer
	// SessionID is kandev's id for this run, set as KANDEV_SESSION_ID in the
	// agent's environment: every process that inherits it is ended with
	// the run, whether or not it stayed in the agent's process group.
	SessionID string
	// HomeID names the home whose daemon runs the session (HomeID), set
	// as KANDEV_SESSION_HOME beside KANDEV_SESSION_ID: a later daemon of
	// the home finds what this one left running, whatever its records say.
	HomeID string
	// ResumeID is the agent's own session id from an earlier run.
	ResumeID string
	// StartTimeout bounds initialize and session setup.
	StartTimeout time.Duration
	Logger       *slog.Logger
	// Sandbox, when set, is what the agent sees: it is started inside
	// bubblewrap, a container or Seatbelt (ADR 0048) rather than on the
	// host, still in its own process group and with its session's marker.
	Sandbox *sandbox.View
}

// Handler receives what the agent sends during turns. Update is called in
// the order the agent sent its notifications.
type Handler interface {
	Update(ctx context.Context, n acp.SessionNotification)
	Permission(ctx context.Context, req acp.RequestPermissionRequest) acp.RequestPermissionResponse
	// Garbage is told of output that is not ACP; the run fails on it.
	Garbage(line string)
	// Fault is told the agent broke the protocol in a way that ends the
	// connection (a line too long to read); the run fails on it.
	Fault(reason string)
}

// UsageHandler is a Handler that takes a turn's token counts, which an
// agent may put in its session/prompt response (unstable in ACP; Claude
// Code's adapter does). A response without them calls nothing.
type UsageHandler interface {
	TurnUsage(u acp.Usage)
}

// Run is one live agent process.
type Run struct {
	spec    Spec
	handler Handler
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	conn    *acp.ClientSideConnection

	caps      acp.AgentCapabilities
	sessionID acp.SessionId
	resumed   bool

	exited  chan struct{}
	exitErr error
	// closeForwards ends the host side of the sandbox's forwarded ports.
	closeForwards func()

	// flow holds back the agent's notifications while the SDK's queue
	// of them is nearly full.
	flow *flow
	// stdout is the read end of the agent's stdout; stdoutDone closes when
	// the reader reached its end. Terminate closes it.
	stdout     io.Closer
	stdoutDone <-chan struct{}
	// peer is set for an agent served in this process (Attach); cmd is nil.
	peer *Peer
	// stderrDone closes when the stderr copier reached EOF.
	stderrDone chan struct{}
	// inputGone closes when a write to the agent's stdin failed: the
	// agent (or the ssh carrying it) has gone, whatever the SDK makes of
	// the write's error.
	inputGone chan struct{}

	// garbage is the first line the agent wrote that is not ACP; fault
	// is why the connection broke on its side. The first of each is the
	// one kept and told to the handler.
	garbage, fault firstWins

	mu sync.Mutex
	// cancels counts session/cancel notifications sent, so Prompt knows
	// whether kandev cancelled the turn it ran.
	cancels uint64
	// fallbacks are the session-opening steps that failed before one
	// worked, for the caller to record.
	fallbacks []string
	// authMethod is the ACP authentication method Open used (AuthMethod).
	authMethod string
	// permissions are the cancels of the permission requests in flight;
	// Cancel ends them all.
	permissions map[uint64]context.CancelFunc
	permSeq     uint64
}

// Start spawns the agent in its own process group. It returns as soon as
// the process exists, so a caller can register the pid (and a stop can find
// it) before the slower protocol setup in Open.
func Start(spec Spec, h Handler) (*Run, error) {
	cmd := agentCommand(spec)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("agent stdin: %w", err)
	}
	// Our own pipe rather than StdoutPipe: Wait closes that one as soon as
	// the process exits, dropping what the agent wrote just before it
	// exited (its last words before a crash). This one is read to EOF.
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("agent stdout: %w", err)
	}
	cmd.Stdout = stdoutW
	stderr, err := pipeStderr(cmd, spec)
	if err != nil {
		return nil, err
	}
	// The host side of a confined agent's forwarded ports lives as long
	// as its process.
	closeForwards := func() {}
	if spec.Sandbox != nil {
		if closeForwards, err = sandbox.OpenForwards(*spec.Sandbox); err != nil {
			stdoutR.Close()
			stdoutW.Close()
			stderr.abandon()
			return nil, err
		}
	}
	if err := cmd.Start(); err != nil {
		closeForwards()
		stdoutR.Close()
		stdoutW.Close()
		stderr.abandon()
		return nil, fmt.Errorf("start %s: %w", spec.Command, err)
	}
	stdoutW.Close() // the child holds its own copy
	r := &Run{spec: spec, handler: h, cmd: cmd, stdin: stdin, exited: make(chan struct{}),
		flow: newFlow(), stderrDone: make(chan struct{}), closeForwards: closeForwards}
	stdout := r.connect(stdin, stdoutR)
	r.copyStderr(stderr)
	go r.awaitExit(stdout)
	return r, nil
}

// agentCommand is the agent's command line in its own process group, with
// the session's markers in its environment and, for a confined session,
// under its sandbox.
func agentCommand(spec Spec) *exec.Cmd {
	name, args := spec.Command, spec.Args
	env := append(os.Environ(), spec.Env...)
	if spec.SessionID != "" {
		env = append(env, SessionEnv+"="+spec.SessionID)
		if spec.HomeID != "" {
			env = append(env, HomeEnv+"="+spec.HomeID)
		}
	}
	if spec.Sandbox != nil {
		name, args, env = spec.Sandbox.Command(spec.Command, spec.Args, env)
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = spec.Dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// awaitExit records how the process exited and then closes exited.
func (r *Run) awaitExit(stdout *eofReader) {
	r.exitErr = r.cmd.Wait()
	removeContainer(r.spec)
	r.closeForwards()
	// The last words on stdout and stderr belong to the run; helpers
	// the agent left holding a pipe must not hold the exit up for long.
	settle := time.After(stderrSettle)
	for _, done := range []<-chan struct{}{stdout.done, r.stderrDone} {
		select {
		case <-done:
		case <-settle:
		}
	}
	close(r.exited)
}

// connect opens the ACP connection over the agent's stdin and stdout and
// returns the reader that marks stdout's end.
func (r *Run) connect(stdin io.Writer, stdoutR io.ReadCloser) *eofReader {
	stdout := &eofReader{r: stdoutR, done: make(chan struct{})}
	r.stdout, r.stdoutDone = stdoutR, stdout.done
	logger := r.spec.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	// The guard holds reads back until the logger is set: SetLogger on a
	// connection whose reader already runs is a data race in the SDK.
	guard := &lineGuard{r: bufio.NewReaderSize(stdout, 64*1024), onGarbage: r.onGarbage, onFault: r.onFault,
		flow: r.flow, ready: make(chan struct{})}
	if d, ok := stdoutR.(interface{ SetReadDeadline(time.Time) error }); ok && d.SetReadDeadline(time.Time{}) == nil {
		guard.deadline = d.SetReadDeadline
	}
	r.inputGone = make(chan struct{})
	in := &inputWriter{w: stdin, gone: r.inputGone}
	r.conn = acp.NewClientSideConnection(&client{run: r}, in, guard)
	r.conn.SetLogger(slog.New(&sdkLog{next: logger.Handler(), rejected: r.flow.release}))
	close(guard.ready)
	return stdout
}

// eofReader closes done once its reader returns an error (EOF included).
type eofReader struct {
	r    io.Reader
	once sync.Once
	done chan struct{}
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) { // the guard's wait for more chunks (joinWait)
		e.once.Do(func() { close(e.done) })
	}
	return n, err
}

// inputWriter is the agent's stdin as the SDK writes it: a failed write
// closes gone.
type inputWriter struct {
	w    io.Writer
	once sync.Once
	gone chan struct{}
}

func (i *inputWriter) Write(p []byte) (int, error) {
	n, err := i.w.Write(p)
	if err != nil {
		i.once.Do(func() { close(i.gone) })
	}
	return n, err
}

// stderrSettle bounds how long an exit waits for the output copiers.
const stderrSettle = 500 * time.Millisecond

// PID is the agent's process id, which is also its process group id; 0 for
// an agent served in this process.
func (r *Run) PID() int {
	if r.cmd == nil {
		if r.peer != nil {
			return r.peer.PID
		}
		return 0
	}
	return r.cmd.Process.Pid
}

// SessionID is the agent's own session id, set by Open.
func (r *Run) SessionID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(r.sessionID)
}

// Resumed reports whether Open continued an earlier agent session.
func (r *Run) Resumed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.resumed
}

// Exited closes when the process has exited.
func (r *Run) Exited() <-chan struct{} { return r.exited }

// ExitReason describes how the process ended, with the tail of its log.
func (r *Run) ExitReason() string {
	select {
	case <-r.exited:
	default:
		return ""
	}
	var b strings.Builder
	if r.exitErr != nil {
		fmt.Fprintf(&b, "agent exited: %v", r.exitErr)
	} else {
		b.WriteString("agent exited")
	}
	if cause := logCause(r.spec.LogPath); cause != "" {
		fmt.Fprintf(&b, ": %s (stderr in %s)", cause, r.spec.LogPath)
	} else if tail := logTail(r.spec.LogPath, 3); tail != "" {
		fmt.Fprintf(&b, " (stderr: %s)", tail)
	}
	return b.String()
}

// ExitedCleanly reports an exit with status 0.
func (r *Run) ExitedCleanly() bool {
	select {
	case <-r.exited:
		return r.exitErr == nil
	default:
		return false
	}
}

// Fault is why the connection broke on the agent's side (a line too long to
// read), if it did.
func (r *Run) Fault() string { return r.fault.get() }

func (r *Run) onFault(reason string) {
	if r.fault.set(reason) {
		r.handler.Fault(reason)
	}
}

// GarbageLine is the first non-ACP line the agent wrote, if any.
func (r *Run) GarbageLine() string { return r.garbage.get() }

func (r *Run) onGarbage(line string) {
	if r.garbage.set(line) {
		r.handler.Garbage(line)
	}
}

// firstWins keeps the first non-empty string set on it: the reader's
// goroutine sets it while turns read it.
type firstWins struct {
	mu sync.Mutex
	v  string
}

// set keeps v unless a value is kept already, and reports whether none was.
func (f *firstWins) set(v string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	first := f.v == ""
	if first {
		f.v = v
	}
	return first
}

func (f *firstWins) get() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.v
}

// cancelOnExit ends ctx when the process exits, so no call waits on a dead
// agent.
func (r *Run) cancelOnExit(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		select {
		case <-r.exited:
			cancel(errExited)
		case <-r.conn.Done():
			cancel(errExited)
		case <-done:
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
}

var errExited = errors.New("agent process exited")

func (r *Run) wrap(ctx context.Context, step string, err error) error {
	if f := r.Fault(); f != "" {
		return fmt.Errorf("%s: %s", step, f)
	}
	if g := r.GarbageLine(); g != "" {
		return fmt.Errorf("%s: agent wrote output that is not ACP: %q", step, truncate(g, 200))
	}
	if errors.Is(context.Cause(ctx), errExited) || r.disconnected() || r.inputClosed() {
		// The output closed, or the input did (a write to it failed: an
		// agent that exited at once, a command not found on a host, where
		// the SDK's "broken pipe" would hide why): give Wait a moment to
		// record the exit status.
		select {
		case <-r.exited:
		case <-time.After(2 * time.Second):
		}
		if reason := r.ExitReason(); reason != "" {
			return fmt.Errorf("%s: %s", step, reason)
		}
		if !r.disconnected() {
			return fmt.Errorf("%s: agent stopped reading its input", step)
		}
		return fmt.Errorf("%s: agent closed its output", step)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%s: agent did not answer in time", step)
	}
	return fmt.Errorf("%s: %w", step, err)
}

func (r *Run) inputClosed() bool {
	select {
	case <-r.inputGone:
		return true
	default:
		return false
	}
}

func (r *Run) disconnected() bool {
	select {
	case <-r.conn.Done():
		return true
	case <-r.exited:
		return true
	default:
		return false
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
