package mockagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	acp "github.com/coder/acp-go-sdk"
)

// Run serves ACP on in/out until the client disconnects (EOF on in) or ctx
// ends. It returns nil on EOF and ctx's error when ctx ends first. Every MCP
// server process it started is closed before it returns.
//
// When ctx ends, Run closes in if it is an io.Closer so that the SDK's
// reader stops too; otherwise that one reader lingers until in hits EOF.
func Run(ctx context.Context, in io.Reader, out io.Writer, errOut io.Writer, getenv func(string) string) error {
	if getenv != nil && getenv(sleeperEnv) == "1" {
		beStubborn(getenv)
		sleepForever()
	}
	if getenv != nil && beStubborn(getenv) {
		// Input closing does not end a stubborn agent either.
		defer sleepForever()
	}
	if getenv != nil && getenv(lingerEnv) != "" {
		// Codex and Gemini CLI do not exit when their input closes; a
		// signal still ends them (whatever the command's own handling).
		defer func() {
			signal.Reset(syscall.SIGINT, syscall.SIGTERM)
			sleepForever()
		}()
	}
	return run(ctx, config{in: in, out: out, errOut: errOut, getenv: getenv, exit: os.Exit})
}

// Options configure Serve, the mock agent run inside another process.
type Options struct {
	// Getenv is the agent's environment (KANDEV_MOCK_* switches).
	Getenv func(string) string
	// ErrOut receives what the agent writes to stderr.
	ErrOut io.Writer
	// Exit replaces the process exit of `mock: crash` and of
	// KANDEV_MOCK_EXIT_AT_START: output is severed first, then Exit is
	// called with the status a process would exit with.
	Exit func(code int)
	// DialMCP reaches the session's kandev MCP server instead of starting
	// its command.
	DialMCP MCPDialer
}

// Serve is Run for an agent that lives inside the caller's process: engine
// tests drive it over pipes (see agent.Attach). The stubborn and sleeper
// switches, which model processes, do not apply.
func Serve(ctx context.Context, in io.Reader, out io.Writer, o Options) error {
	return run(ctx, config{in: in, out: out, errOut: o.ErrOut, getenv: o.Getenv, exit: o.Exit, dial: o.DialMCP})
}

// config carries Run's arguments plus the process-exit hook, which tests
// replace to observe `mock: crash` without dying.
type config struct {
	in     io.Reader
	out    io.Writer
	errOut io.Writer
	getenv func(string) string
	exit   func(code int)
	dial   MCPDialer
}

func run(ctx context.Context, cfg config) error {
	if cfg.getenv == nil {
		cfg.getenv = func(string) string { return "" }
	}
	if cfg.errOut == nil {
		cfg.errOut = io.Discard
	}
	if cfg.exit == nil {
		cfg.exit = os.Exit
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	out := &guardedWriter{w: cfg.out}
	errOut := &guardedWriter{w: cfg.errOut}
	// Agents that break before the protocol starts: kandev must treat each
	// as a failed run (rule 4), not as a turn that never came.
	if cfg.getenv("KANDEV_MOCK_EXIT_AT_START") != "" {
		fmt.Fprintln(errOut, "mock agent: exiting at start (KANDEV_MOCK_EXIT_AT_START)")
		cfg.exit(2)
		return nil
	}
	if cfg.getenv("KANDEV_MOCK_GARBAGE_AT_START") != "" {
		if _, err := io.WriteString(out, "mock agent banner: this is not json\n"); err != nil {
			return fmt.Errorf("write banner: %w", err)
		}
	}
	logger := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelWarn}))

	a, err := newAgent(ctx, cfg, out, errOut, logger)
	if err != nil {
		return err
	}
	// The SDK starts reading as soon as the connection exists, and SetLogger
	// is not synchronised with its reader, so hold reads back until the
	// logger and a.conn are in place.
	ready := make(chan struct{})
	conn := acp.NewAgentSideConnection(a, out, gatedReader{r: cfg.in, ready: ready})
	conn.SetLogger(logger)
	a.conn = conn
	close(ready)

	var runErr error
	select {
	case <-conn.Done():
	case <-ctx.Done():
		runErr = ctx.Err()
		if c, ok := cfg.in.(io.Closer); ok {
			_ = c.Close()
			<-conn.Done()
		}
	}
	cancel() // ends turns that are not tied to the connection's lifetime
	a.shutdown()
	return runErr
}

// gatedReader blocks reads until ready is closed.
type gatedReader struct {
	r     io.Reader
	ready <-chan struct{}
}

func (g gatedReader) Read(p []byte) (int, error) {
	<-g.ready
	return g.r.Read(p)
}

// errSevered is what writes fail with after `mock: crash`.
var errSevered = errors.New("mock agent crashed")

// guardedWriter serialises writes from the SDK and from `mock: garbage` so
// that lines never interleave, and can be severed so that nothing more
// reaches the client after `mock: crash`.
type guardedWriter struct {
	mu      sync.Mutex
	w       io.Writer
	severed bool
	// trailer goes out in the same write as the next JSON-RPC response
	// (afterNextResponse).
	trailer []byte
}

func (g *guardedWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.severed {
		return 0, errSevered
	}
	if len(g.trailer) > 0 && isResponse(p) {
		buf := append(append([]byte(nil), p...), g.trailer...)
		g.trailer = nil
		if _, err := g.w.Write(buf); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return g.w.Write(p)
}

// afterNextResponse has b written right after the next JSON-RPC response,
// in the same write: the answer of the request being handled, when no
// other request is in flight.
func (g *guardedWriter) afterNextResponse(b []byte) {
	g.mu.Lock()
	g.trailer = append(g.trailer, b...)
	g.mu.Unlock()
}

// isResponse is true for a JSON-RPC response (an id, no method).
func isResponse(p []byte) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	return json.Unmarshal(p, &m) == nil && len(m.ID) > 0 && m.Method == ""
}

// writeLocked runs write with the stream to itself, so a long write (a
// huge line in chunks) is never interleaved with the SDK's messages.
func (g *guardedWriter) writeLocked(write func(io.Writer) error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.severed {
		return errSevered
	}
	return write(g.w)
}

func (g *guardedWriter) sever() {
	g.mu.Lock()
	g.severed = true
	g.mu.Unlock()
}

// tracker counts running ACP handlers so that Run can wait for them: the
// SDK runs each request on its own goroutine and never joins them.
type tracker struct {
	mu     sync.Mutex
	cond   *sync.Cond
	n      int
	closed bool
}

func newTracker() *tracker {
	t := &tracker{}
	t.cond = sync.NewCond(&t.mu)
	return t
}

// enter registers a handler; it reports false once shutdown has begun.
func (t *tracker) enter() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.n++
	return true
}

func (t *tracker) leave() {
	t.mu.Lock()
	t.n--
	if t.n == 0 {
		t.cond.Broadcast()
	}
	t.mu.Unlock()
}

// closeAndWait refuses new handlers and waits for running ones.
func (t *tracker) closeAndWait() {
	t.mu.Lock()
	t.closed = true
	for t.n > 0 {
		t.cond.Wait()
	}
	t.mu.Unlock()
}
