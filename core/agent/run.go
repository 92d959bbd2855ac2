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
)

// Spec says what to run and how to reach kandev from inside it.
type Spec struct {
	Command string
	Args    []string
	// Env is added to the daemon's environment (KEY=VALUE).
	Env []string
	Dir string
	// LogPath receives the agent's stderr.
	LogPath string
	// MCPServers are injected through session/new (or resume/load).
	MCPServers []acp.McpServer
	// ResumeID is the agent's own session id from an earlier run.
	ResumeID string
	// StartTimeout bounds initialize and session setup.
	StartTimeout time.Duration
	Logger       *slog.Logger
}

// Handler receives what the agent sends during turns. Update is called in
// the order the agent sent its notifications.
type Handler interface {
	Update(ctx context.Context, n acp.SessionNotification)
	Permission(ctx context.Context, req acp.RequestPermissionRequest) acp.RequestPermissionResponse
	// Garbage is told of output that is not ACP; the run fails on it.
	Garbage(line string)
}

// Run is one live agent process.
type Run struct {
	spec    Spec
	handler Handler
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	conn    *acp.ClientSideConnection
	logFile *os.File

	caps      acp.AgentCapabilities
	sessionID acp.SessionId
	resumed   bool

	exited  chan struct{}
	exitErr error

	mu      sync.Mutex
	garbage string
	// cancels counts session/cancel notifications sent, so Prompt knows
	// whether kandev cancelled the turn it ran.
	cancels uint64
	// fallbacks are the session-opening steps that failed before one
	// worked, for the caller to record.
	fallbacks []string
}

// Start spawns the agent in its own process group. It returns as soon as
// the process exists, so a caller can register the pid (and a stop can find
// it) before the slower protocol setup in Open.
func Start(spec Spec, h Handler) (*Run, error) {
	cmd := exec.Command(spec.Command, spec.Args...)
	cmd.Dir = spec.Dir
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("agent stdin: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("agent stdout: %w", err)
	}
	var logFile *os.File
	if spec.LogPath != "" {
		logFile, err = os.OpenFile(spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("agent log %s: %w", spec.LogPath, err)
		}
		cmd.Stderr = logFile
	}
	if err := cmd.Start(); err != nil {
		if logFile != nil {
			logFile.Close()
		}
		return nil, fmt.Errorf("start %s: %w", spec.Command, err)
	}
	r := &Run{spec: spec, handler: h, cmd: cmd, stdin: stdin, logFile: logFile, exited: make(chan struct{})}
	logger := spec.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	// The guard holds reads back until the logger is set: SetLogger on a
	// connection whose reader already runs is a data race in the SDK.
	guard := &lineGuard{r: bufio.NewReaderSize(stdout, 64*1024), onGarbage: r.onGarbage, ready: make(chan struct{})}
	r.conn = acp.NewClientSideConnection(&client{run: r}, stdin, guard)
	r.conn.SetLogger(logger)
	close(guard.ready)
	go func() {
		r.exitErr = cmd.Wait()
		if logFile != nil {
			logFile.Close()
		}
		close(r.exited)
	}()
	return r, nil
}

// PID is the agent's process id, which is also its process group id.
func (r *Run) PID() int { return r.cmd.Process.Pid }

// SessionID is the agent's own session id, set by Open.
func (r *Run) SessionID() string { return string(r.sessionID) }

// Resumed reports whether Open continued an earlier agent session.
func (r *Run) Resumed() bool { return r.resumed }

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
				r.sessionID, r.resumed = id, true
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
	r.sessionID = sess.SessionId
	return nil
}

// Fallbacks lists the ways of continuing the earlier session that Open
// tried and that failed, in order.
func (r *Run) Fallbacks() []string { return r.fallbacks }

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
	resp, err := r.conn.Prompt(ctx, acp.PromptRequest{SessionId: r.sessionID, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
	if err != nil {
		var rpcErr *acp.RequestError
		if r.cancelCount() != before && errors.As(err, &rpcErr) && ctx.Err() == nil && !r.disconnected() && r.GarbageLine() == "" {
			return acp.StopReasonCancelled, nil
		}
		return "", r.wrap(ctx, "prompt", err)
	}
	return resp.StopReason, nil
}

func (r *Run) cancelCount() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cancels
}

// Cancel asks the agent to end the running turn (session/cancel).
func (r *Run) Cancel(ctx context.Context) error {
	if r.sessionID == "" {
		return nil
	}
	// Counted before sending: the agent's reply may beat our return.
	r.mu.Lock()
	r.cancels++
	r.mu.Unlock()
	return r.conn.Cancel(ctx, acp.CancelNotification{SessionId: r.sessionID})
}

// Grace is how long each step of Terminate waits for the process to exit.
type Grace struct {
	Cancel, Interrupt, Terminate time.Duration
}

// DefaultGrace keeps a stop prompt while giving a well-behaved agent time to
// save its session.
var DefaultGrace = Grace{Cancel: 2 * time.Second, Interrupt: 2 * time.Second, Terminate: 2 * time.Second}

// Terminate tears the agent down: session/cancel, close stdin, then SIGINT,
// SIGTERM and SIGKILL to the whole process group, each after a grace
// period. It returns once the leader has exited and the group is killed.
func (r *Run) Terminate(g Grace) {
	ctx, cancel := context.WithTimeout(context.Background(), g.Cancel)
	_ = r.Cancel(ctx)
	cancel()
	r.stdin.Close()
	pgid := r.PID()
	steps := []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{0, g.Cancel}, {syscall.SIGINT, g.Interrupt}, {syscall.SIGTERM, g.Terminate}}
	for _, s := range steps {
		if s.sig != 0 {
			_ = syscall.Kill(-pgid, s.sig)
		}
		select {
		case <-r.exited:
			// The leader is gone; children it left in the group (such as the
			// kandev mcp bridge) must not outlive it.
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return
		case <-time.After(s.wait):
		}
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-r.exited
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
	if g := r.GarbageLine(); g != "" {
		return fmt.Errorf("%s: agent wrote output that is not ACP: %q", step, truncate(g, 200))
	}
	if errors.Is(context.Cause(ctx), errExited) || r.disconnected() {
		// The output closed: give Wait a moment to record the exit status.
		select {
		case <-r.exited:
		case <-time.After(2 * time.Second):
		}
		if reason := r.ExitReason(); reason != "" {
			return fmt.Errorf("%s: %s", step, reason)
		}
		return fmt.Errorf("%s: agent closed its output", step)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%s: agent did not answer in time", step)
	}
	return fmt.Errorf("%s: %w", step, err)
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

// lineGuard passes ACP's line-delimited JSON through and reports the first
// line that is not JSON, which means the agent is not speaking ACP.
type lineGuard struct {
	r         *bufio.Reader
	onGarbage func(string)
	buf       []byte
	ready     chan struct{}
}

func (g *lineGuard) Read(p []byte) (int, error) {
	<-g.ready
	for len(g.buf) == 0 {
		line, err := g.r.ReadBytes('\n')
		if len(line) > 0 {
			trimmed := bytes.TrimSpace(line)
			if len(trimmed) > 0 && !json.Valid(trimmed) {
				g.onGarbage(string(trimmed))
			} else {
				g.buf = line
			}
		}
		if err != nil {
			if len(g.buf) > 0 {
				break
			}
			return 0, err
		}
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	return n, nil
}

func logTail(path string, lines int) string {
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	all := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return truncate(strings.Join(all, " | "), 400)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
