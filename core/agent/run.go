// Package agent runs one agent CLI as a child process and speaks the Agent
// Client Protocol to it: spawn in its own process group, initialize, open or
// resume a session with the kandev MCP server injected, run prompt turns,
// cancel, and tear the process group down.
package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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

	mu      sync.Mutex
	garbage string
	// cancels counts session/cancel notifications sent, so Prompt knows
	// whether kandev cancelled the turn it ran.
	cancels uint64
	// fallbacks are the session-opening steps that failed before one
	// worked, for the caller to record.
	fallbacks []string
	fault     string
	// permissions are the cancels of the permission requests in flight;
	// Cancel ends them all.
	permissions map[uint64]context.CancelFunc
	permSeq     uint64
}

// Start spawns the agent in its own process group. It returns as soon as
// the process exists, so a caller can register the pid (and a stop can find
// it) before the slower protocol setup in Open.
func Start(spec Spec, h Handler) (*Run, error) {
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
	// stderr goes through a pipe the daemon copies into a capped, rotated
	// log: written straight to a file, a flooding agent could fill the disk.
	var log *capLog
	var stderrR, stderrW *os.File
	if spec.LogPath != "" {
		limit := spec.LogLimit
		if limit <= 0 {
			limit = DefaultLogLimit
		}
		log, err = openCapLog(spec.LogPath, limit)
		if err != nil {
			return nil, err
		}
		stderrR, stderrW, err = os.Pipe()
		if err != nil {
			log.Close()
			return nil, fmt.Errorf("agent stderr: %w", err)
		}
		cmd.Stderr = stderrW
	}
	if err := cmd.Start(); err != nil {
		stdoutR.Close()
		stdoutW.Close()
		if log != nil {
			log.Close()
			stderrR.Close()
			stderrW.Close()
		}
		return nil, fmt.Errorf("start %s: %w", spec.Command, err)
	}
	stdoutW.Close() // the child holds its own copy
	r := &Run{spec: spec, handler: h, cmd: cmd, stdin: stdin, exited: make(chan struct{}),
		flow: newFlow(), stderrDone: make(chan struct{})}
	stdout := r.connect(stdin, stdoutR)
	if log != nil {
		stderrW.Close() // the child holds its own copy
		go func() {
			defer close(r.stderrDone)
			defer log.Close()
			copyBounded(log, stderrR)
			stderrR.Close()
		}()
	} else {
		close(r.stderrDone)
	}
	go func() {
		r.exitErr = cmd.Wait()
		removeContainer(spec)
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
	}()
	return r, nil
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

// Peer is an agent served inside this process over a pair of pipes rather
// than a child process: engine tests run the mock agent this way, so the
// engine's races can be driven without spawning anything. Everything above
// the byte streams (the ACP connection, the line guard, cancels, the
// handler) is the same code a process gets.
type Peer struct {
	// Stdin carries what kandev sends; closing it is the agent's EOF.
	Stdin io.WriteCloser
	// Stdout carries what the agent sends; the agent closes its end when
	// it ends.
	Stdout io.ReadCloser
	// Done closes once the agent has ended; Err then says why (nil: a
	// clean exit).
	Done <-chan struct{}
	Err  func() error
	// Kill ends the agent at once, as SIGKILL ends a process.
	Kill func()
	// PID is the local process that carries the agent, if any (the ssh
	// client of an agent on a host); 0 when there is none.
	PID int
}

// Attach opens an ACP connection to an agent served in this process.
func Attach(spec Spec, h Handler, p Peer) *Run {
	r := &Run{spec: spec, handler: h, stdin: p.Stdin, peer: &p, exited: make(chan struct{}),
		flow: newFlow(), stderrDone: make(chan struct{})}
	close(r.stderrDone)
	stdout := r.connect(p.Stdin, p.Stdout)
	go func() {
		<-p.Done
		r.exitErr = p.Err()
		select {
		case <-stdout.done:
		case <-time.After(stderrSettle):
		}
		close(r.exited)
	}()
	return r
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
	if tail := logTail(r.spec.LogPath, 3); tail != "" {
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
func (r *Run) Fault() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fault
}

func (r *Run) onFault(reason string) {
	r.mu.Lock()
	first := r.fault == ""
	if first {
		r.fault = reason
	}
	r.mu.Unlock()
	if first {
		r.handler.Fault(reason)
	}
}

// GarbageLine is the first non-ACP line the agent wrote, if any.
func (r *Run) GarbageLine() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.garbage
}

func (r *Run) onGarbage(line string) {
	r.mu.Lock()
	first := r.garbage == ""
	if first {
		r.garbage = line
	}
	r.mu.Unlock()
	if first {
		r.handler.Garbage(line)
	}
}

// Open runs initialize, then continues the earlier session when the agent
// can: session/resume, then session/load, then session/new, each failure
// falling to the next (Fallbacks lists them). An agent may advertise resume
// and not implement it (Qwen Code), so an advertised method is no promise.
func (r *Run) Open(ctx context.Context) error {
	timeout := r.spec.StartTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ctx, stop := r.cancelOnExit(ctx)
	defer stop()

	init, err := r.conn.Initialize(ctx, acp.InitializeRequest{
		ProtocolVersion:    acp.ProtocolVersionNumber,
		ClientCapabilities: acp.ClientCapabilities{},
		ClientInfo:         &acp.Implementation{Name: "kandev", Version: "1"},
	})
	if err != nil {
		return r.wrap(ctx, "initialize", err)
	}
	r.caps = init.AgentCapabilities
	servers := r.spec.MCPServers
	if servers == nil {
		servers = []acp.McpServer{}
	}
	if r.spec.ResumeID != "" {
		id := acp.SessionId(r.spec.ResumeID)
		steps := []struct {
			method string
			ok     bool
			call   func() error
		}{
			{acp.AgentMethodSessionResume, r.caps.SessionCapabilities.Resume != nil, func() error {
				_, err := r.conn.ResumeSession(ctx, acp.ResumeSessionRequest{SessionId: id, Cwd: r.spec.Dir, McpServers: servers})
				return err
			}},
			{acp.AgentMethodSessionLoad, r.caps.LoadSession, func() error {
				_, err := r.conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: id, Cwd: r.spec.Dir, McpServers: servers})
				return err
			}},
		}
		for _, st := range steps {
			if !st.ok {
				continue
			}
			err := st.call()
			if err == nil {
				r.mu.Lock()
				r.sessionID, r.resumed = id, true
				r.mu.Unlock()
				return nil
			}
			if ctx.Err() != nil || r.disconnected() {
				return r.wrap(ctx, st.method, err)
			}
			// The agent cannot continue that session this way: try the next
			// rather than refuse the turn; the conversation kandev recorded
			// is still whole.
			r.fallbacks = append(r.fallbacks, fmt.Sprintf("%s %s failed: %s", st.method, id, truncate(err.Error(), 300)))
		}
	}
	sess, err := r.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: r.spec.Dir, McpServers: servers})
	if err != nil {
		return r.wrap(ctx, "session/new", err)
	}
	r.mu.Lock()
	r.sessionID = sess.SessionId
	r.mu.Unlock()
	return nil
}

// Fallbacks lists the ways of continuing the earlier session that Open
// tried and that failed, in order.
func (r *Run) Fallbacks() []string { return r.fallbacks }

// Settle waits until every notification kandev has received from the
// agent so far has been handed to the handler (bounded by ctx, the
// agent's exit and settleWait). The engine calls it before the first
// prompt of a resumed session: what the agent streamed until then, as far
// as it reached kandev, is its replay of the history (Gemini CLI streams
// it after answering session/load), and none of it is new.
func (r *Run) Settle(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, settleWait)
	defer cancel()
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-r.exited:
		}
		close(done)
	}()
	r.flow.settle(done)
	cancel()
	<-done
}

// settleWait bounds Settle: a handler stuck on the store must not hold
// the turn back for ever.
const settleWait = 10 * time.Second

// Prompt runs one turn and returns the agent's stop reason. The SDK hands
// every session/update sent before the response to the handler first.
//
// When kandev cancelled the turn and the agent answers with a JSON-RPC
// error instead of stopReason "cancelled" (Qwen Code replies -32603
// "Request was aborted"), the turn was cancelled, not failed: the agent is
// alive and its session usable.
func (r *Run) Prompt(ctx context.Context, text string) (acp.StopReason, error) {
	ctx, stop := r.cancelOnExit(ctx)
	defer stop()
	before := r.cancelCount()
	resp, err := r.conn.Prompt(ctx, acp.PromptRequest{SessionId: acp.SessionId(r.SessionID()), Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
	if err != nil {
		var rpcErr *acp.RequestError
		if r.cancelCount() != before && errors.As(err, &rpcErr) && ctx.Err() == nil && !r.disconnected() && r.GarbageLine() == "" && r.Fault() == "" {
			return acp.StopReasonCancelled, nil
		}
		return "", r.wrap(ctx, "prompt", err)
	}
	if uh, ok := r.handler.(UsageHandler); ok && resp.Usage != nil {
		uh.TurnUsage(*resp.Usage)
	}
	return resp.StopReason, nil
}

// permissionContext derives the context a permission request is handled
// under: Cancel ends it. done releases it.
func (r *Run) permissionContext(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	r.mu.Lock()
	if r.permissions == nil {
		r.permissions = map[uint64]context.CancelFunc{}
	}
	r.permSeq++
	id := r.permSeq
	r.permissions[id] = cancel
	r.mu.Unlock()
	return ctx, func() {
		r.mu.Lock()
		delete(r.permissions, id)
		r.mu.Unlock()
		cancel()
	}
}

func (r *Run) cancelCount() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cancels
}

// Cancel asks the agent to end the running turn (session/cancel).
func (r *Run) Cancel(ctx context.Context) error {
	// A stop may cancel while Open still runs in another goroutine: the
	// session id is read under the lock Open writes it under.
	r.mu.Lock()
	id := r.sessionID
	if id == "" {
		r.mu.Unlock()
		return nil
	}
	// Counted before sending: the agent's reply may beat our return.
	r.cancels++
	for _, cancel := range r.permissions {
		cancel()
	}
	r.mu.Unlock()
	return r.conn.Cancel(ctx, acp.CancelNotification{SessionId: id})
}

// Grace is how long each step of Terminate waits for the process to exit.
type Grace struct {
	Cancel, Interrupt, Terminate time.Duration
}

// DefaultGrace keeps a stop prompt while giving a well-behaved agent time to
// save its session.
var DefaultGrace = Grace{Cancel: 2 * time.Second, Interrupt: 2 * time.Second, Terminate: 2 * time.Second}

// Terminate tears the agent down: session/cancel, close stdin, then SIGINT,
// SIGTERM and SIGKILL to the whole process group and to every process that
// carries the session's id (helpers that left the group, setsid
// grandchildren), each after a grace period. It returns once the leader has
// exited and those processes are killed and gone (or, for one stuck in the
// kernel, after a bounded wait).
func (r *Run) Terminate(g Grace) {
	r.flow.close()
	ctx, cancel := context.WithTimeout(context.Background(), g.Cancel)
	_ = r.Cancel(ctx)
	cancel()
	r.stdin.Close()
	if r.peer != nil {
		r.terminatePeer(g)
		return
	}
	pgid := r.PID()
	id := r.spec.SessionID
	steps := []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{0, g.Cancel}, {syscall.SIGINT, g.Interrupt}, {syscall.SIGTERM, g.Terminate}}
	for _, s := range steps {
		if s.sig != 0 {
			_ = syscall.Kill(-pgid, s.sig)
			signalSession(id, s.sig)
		}
		select {
		case <-r.exited:
		case <-time.After(s.wait):
			continue
		}
		break
	}
	// The leader is gone or out of time; whatever it leaves behind, in
	// the group (such as the kandev mcp bridge) or out of it, must not
	// outlive it.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-r.exited
	KillSession(id, killWait)
	// Everything of the session is gone, so the reader reaches EOF once it
	// has taken what is left in the pipe; only a process that escaped the
	// session's id can still hold the pipe open, and it must not hold the
	// reader forever. Never closed earlier: what an agent wrote just before
	// it exited is read, however slowly the daemon gets to it.
	select {
	case <-r.stdoutDone:
	case <-time.After(killWait):
	}
	r.stdout.Close()
}

// terminatePeer is Terminate for an agent in this process: after the
// cancel and the closed stdin, the grace a process would get before its
// signals, then the kill.
func (r *Run) terminatePeer(g Grace) {
	select {
	case <-r.exited:
	case <-time.After(g.Cancel + g.Interrupt + g.Terminate):
		r.peer.Kill()
		<-r.exited
	}
	r.stdout.Close()
}

// killWait bounds the wait for SIGKILLed processes to disappear.
const killWait = 5 * time.Second

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

// MaxLine is the longest line an agent may write on stdout. It is the ACP
// SDK's own limit (acp-go-sdk v0.13.0 scans with a 10 MiB buffer, newline
// included): a longer line would end the connection with a bare "token too
// long", so the guard refuses it first, with a reason, without holding
// more than MaxLine of it.
const MaxLine = 10<<20 - 1

// lineGuard passes ACP's line-delimited JSON through and reports the first
// line that is not JSON, which means the agent is not speaking ACP. It
// reads with bounded buffers: a line over MaxLine ends the stream with a
// fault instead of growing without limit. It also holds session/update
// notifications back while the SDK has too many of them queued.
type lineGuard struct {
	r         *bufio.Reader
	onGarbage func(string)
	onFault   func(string)
	flow      *flow
	line      []byte
	buf       []byte
	join      coalescer
	// dense: the last join took in at least denseJoin; the next one reads
	// what comes as it comes instead of sleeping through its window.
	dense bool
	// windowEnd replaces the package's windowEnd (tests: a window that
	// does not depend on when the test runs).
	windowEnd func(time.Time) time.Time
	// deadline sets the agent's stdout's read deadline, when it has one
	// (a pipe; not an in-process peer): the guard then waits up to
	// joinWait for more chunks to join.
	deadline func(time.Time) error
	err      error
	ready    chan struct{}
}

func (g *lineGuard) Read(p []byte) (int, error) {
	<-g.ready
	for len(g.buf) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		line, err := g.readLine()
		g.flow.setBuffered(g.r.Buffered())
		if err == errLineTooLong {
			g.onFault(fmt.Sprintf("agent wrote a line over %d MiB", (MaxLine+1)>>20))
			g.err = err
			return 0, err
		}
		if len(line) > 0 {
			if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
				g.classify(line, trimmed)
			}
		}
		if err != nil {
			g.err = err
		}
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	return n, nil
}

// classify decides what becomes of one non-blank line: passed to the SDK
// (a session/update counted by the flow first), dropped, or reported as
// garbage.
func (g *lineGuard) classify(line, trimmed []byte) {
	if !json.Valid(trimmed) {
		g.onGarbage(string(trimmed))
		return
	}
	e, ok := scanEnvelope(trimmed)
	if !ok {
		var msg wireMessage
		if json.Unmarshal(trimmed, &msg) != nil {
			// Valid JSON the SDK cannot read as a message: it skips such
			// lines too.
			return
		}
		e = envelope{method: msg.Method, hasID: msg.ID != nil}
	}
	switch {
	case e.method == acp.ClientMethodSessionUpdate && e.hasID:
		// session/update sent as a request: the SDK would hand it to the
		// client's SessionUpdate on a goroutine of its own, out of order
		// and releasing the flow for a notification still queued (an
		// agent could overflow the SDK's queue that way). ACP has it a
		// notification only; the agent gets no answer.
	case !e.isNotification():
		g.buf = line
	case e.method == acp.ClientMethodSessionUpdate:
		// Counted before the SDK decodes its params: a notification it
		// then rejects is released by the SDK's log of the rejection
		// (sdkLog), one it delivers by the client's SessionUpdate.
		g.flow.acquire()
		g.buf = g.coalesce(line, trimmed)
	default:
		// The client handles no other notification: dropped here, so
		// every notification passed on is one the flow sees released.
	}
}

// coalesce returns the session/update line to pass on: the line itself,
// or, when it is a text chunk and the lines after it already read are
// chunks of the same entry, one line with all their texts (coalesce.go).
func (g *lineGuard) coalesce(line, trimmed []byte) []byte {
	if (g.deadline == nil && g.r.Buffered() == 0) || !g.join.start(trimmed) {
		return line
	}
	end := g.windowEnd
	if end == nil {
		end = windowEnd
	}
	until := end(time.Now())
	taken := 0 // bytes of the lines joined after the first
	for {
		ahead, _ := g.r.Peek(g.r.Buffered())
		i := bytes.IndexByte(ahead, '\n')
		if i < 0 {
			if g.wait(until, len(ahead), !g.dense) {
				continue
			}
			break
		}
		if next := bytes.TrimSpace(ahead[:i]); len(next) > 0 && !g.join.add(next) {
			break
		}
		_, _ = g.r.Discard(i + 1)
		taken += i + 1
	}
	g.dense = taken >= denseJoin
	g.flow.setBuffered(g.r.Buffered())
	if g.join.n == 1 {
		return line
	}
	return g.join.finish()
}

// joinWait is the beat of the guard's windows: after a chunk it waits for
// the next ones to join it until the window ends (windowEnd), at most
// this much later. An agent streams a chunk every few milliseconds: the
// SDK then decodes one notification for several chunks, the engine takes
// one. It delays each chunk by at most this much (ADRs 0059, 0063) — a
// kill -9 may lose it beside the recorder's streamFlushDelay.
const joinWait = 60 * time.Millisecond

// windowEnd is when a join begun at now ends: the next multiple of
// joinWait on the wall clock, so that every agent's window ends at the
// same moment — the joins of fifty agents then reach the recorder
// together, and one flush (streamFlushDelay after them) writes them all,
// and the runtime fires their timers at once.
func windowEnd(now time.Time) time.Time {
	return now.Add(joinWait - time.Duration(now.UnixNano()%int64(joinWait)))
}

// denseJoin is how much a join takes in when the agent writes faster than
// a stream of tokens (a burst, a replay): the guard then stops sleeping
// through its windows, as the agent is likely blocked on a full pipe,
// until a join takes less.
const denseJoin = 16 << 10

// readAhead bounds the read after a window slept through, when nothing
// came meanwhile.
const readAhead = time.Millisecond

// wait reads more of the agent's output into the buffer, until at the
// latest, and reports whether more came. A sparse stream (sleep) is slept
// through to until and then read at once: waking for each chunk as it
// lands cost a read and a reschedule per chunk, at fifty agents most of
// what the daemon spent on their streams. A dense one is read as it comes.
func (g *lineGuard) wait(until time.Time, have int, sleep bool) bool {
	now := time.Now()
	if g.deadline == nil || have >= g.r.Size() || !now.Before(until) {
		return false
	}
	if sleep {
		time.Sleep(until.Sub(now))
		until = time.Now().Add(readAhead)
	}
	if g.deadline(until) != nil {
		return false
	}
	_, err := g.r.Peek(have + 1)
	_ = g.deadline(time.Time{})
	return err == nil
}

var errLineTooLong = errors.New("line too long")

// readLine returns the next line, newline included, reusing one buffer of
// at most MaxLine+1 bytes. A longer line is an error: nothing more of the
// stream is read.
func (g *lineGuard) readLine() ([]byte, error) {
	g.line = g.line[:0]
	for {
		frag, err := g.r.ReadSlice('\n')
		if len(g.line)+len(frag) > MaxLine+1 {
			g.line = nil // let the large buffer go
			return nil, errLineTooLong
		}
		g.line = append(g.line, frag...)
		if err == bufio.ErrBufferFull {
			continue
		}
		return g.line, err
	}
}

// wireMessage is the SDK's view of a JSON-RPC message (its anyMessage), so
// the guard classifies a line exactly as the SDK will.
type wireMessage struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      *json.RawMessage  `json:"id,omitempty"`
	Method  string            `json:"method,omitempty"`
	Params  json.RawMessage   `json:"params,omitempty"`
	Result  json.RawMessage   `json:"result,omitempty"`
	Error   *acp.RequestError `json:"error,omitempty"`
}

// flowLimit is how many session/update notifications may wait in the SDK
// at once. The SDK queues at most 1024 and closes the connection when the
// queue overflows; holding the reader back below that keeps a chatty
// agent (or a long session/load replay) connected, with the agent's own
// writes blocking on the pipe meanwhile.
const flowLimit = 256

// flow counts notifications handed to the SDK and not yet handled, and
// the bytes read from the agent and not yet parsed.
type flow struct {
	mu       sync.Mutex
	cond     *sync.Cond
	pending  int
	buffered int
	closed   bool
}

// setBuffered records how much the reader holds that it has not parsed.
func (f *flow) setBuffered(n int) {
	f.mu.Lock()
	f.buffered = n
	f.cond.Broadcast()
	f.mu.Unlock()
}

// settle waits until everything read so far is handled, the run is torn
// down, or done closes.
func (f *flow) settle(done <-chan struct{}) {
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-done:
			f.mu.Lock()
			f.cond.Broadcast()
			f.mu.Unlock()
		case <-stop:
		}
	}()
	f.mu.Lock()
	defer f.mu.Unlock()
	for (f.pending > 0 || f.buffered > 0) && !f.closed {
		select {
		case <-done:
			return
		default:
		}
		f.cond.Wait()
	}
}

func newFlow() *flow {
	f := &flow{}
	f.cond = sync.NewCond(&f.mu)
	return f
}

// acquire waits for room for one more notification.
func (f *flow) acquire() {
	f.mu.Lock()
	for f.pending >= flowLimit && !f.closed {
		f.cond.Wait()
	}
	f.pending++
	f.mu.Unlock()
}

// release marks one notification handled.
func (f *flow) release() {
	f.mu.Lock()
	if f.pending > 0 {
		f.pending--
	}
	f.cond.Broadcast()
	f.mu.Unlock()
}

// close lets the reader go on regardless: the run is being torn down.
func (f *flow) close() {
	f.mu.Lock()
	f.closed = true
	f.cond.Broadcast()
	f.mu.Unlock()
}

// DefaultLogLimit caps each generation of a session's stderr log.
const DefaultLogLimit = 8 << 20

// capLog is a session's stderr log: once a file reaches its limit it
// becomes path+".1" and a new one starts, so the newest output (the part
// a failure reason shows) is always kept and the disk use is bounded.
type capLog struct {
	path    string
	limit   int64
	f       *os.File
	written int64
}

func openCapLog(path string, limit int64) (*capLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("agent log %s: %w", path, err)
	}
	l := &capLog{path: path, limit: limit, f: f}
	if st, err := f.Stat(); err == nil {
		l.written = st.Size()
	}
	return l, nil
}

func (l *capLog) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if l.f == nil {
			return n, nil // rotation failed: drop the rest rather than block the agent
		}
		if l.written >= l.limit {
			l.rotate()
			continue
		}
		chunk := p
		if room := l.limit - l.written; int64(len(chunk)) > room {
			chunk = chunk[:room]
		}
		w, err := l.f.Write(chunk)
		l.written += int64(w)
		if err != nil {
			// A full disk: drop the output, keep the agent running.
			l.written = l.limit
		}
		p = p[len(chunk):]
	}
	return n, nil
}

func (l *capLog) rotate() {
	l.f.Close()
	l.f = nil
	_ = os.Rename(l.path, l.path+".1")
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return
	}
	l.f = f
	note := fmt.Sprintf("[kandev: stderr reached %d bytes; the previous %d bytes are in %s.1, older output was dropped]\n",
		l.limit, l.limit, l.path)
	w, _ := f.WriteString(note)
	l.written = int64(w)
}

func (l *capLog) Close() {
	if l.f != nil {
		l.f.Close()
	}
}

// copyBounded copies the agent's stderr into the log with one small buffer
// until EOF, whatever the volume.
func copyBounded(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32*1024)
	_, _ = io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, buf)
}

// logTailBytes is how much of the end of a log logTail reads.
const logTailBytes = 16 * 1024

// logTail returns the last lines of a log, reading only its end.
func logTail(path string, lines int) string {
	if path == "" {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := st.Size() - logTailBytes
	if off < 0 {
		off = 0
	}
	b := make([]byte, st.Size()-off)
	n, _ := f.ReadAt(b, off)
	b = b[:n]
	if off > 0 {
		// The first line is probably cut; drop it when more follow.
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		}
	}
	all := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	// Each line is cut on its own, so one long line cannot push the last
	// words out of the reason.
	for i := range all {
		all[i] = truncate(all[i], 400/lines)
	}
	return strings.Join(all, " | ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
