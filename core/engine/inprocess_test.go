package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/engine"
	"github.com/kandev/kandev/internal/mockagent"
	"github.com/kandev/kandev/mcpserve"
	"github.com/kandev/kandev/store"
)

// inProc is an engine whose agents are mock agents served in this process
// over pipes (engine.Options.Launcher): every byte of ACP between the
// engine and the agent goes through core/agent's real client, and every
// tool call through the real MCP bridge (mcpserve) with the session's
// token checked by the engine as the daemon checks it. Only the processes
// and the daemon's HTTP hop are missing, so a race between a stop, a
// launch and a turn can be gated step by step instead of timed.
type inProc struct {
	t   *testing.T
	eng *engine.Engine
	db  *store.DB
	ctx context.Context
	dir string

	mu     sync.Mutex
	tokens map[string]string // session id → token
	// gate, when set, holds the next agent's reads (so its initialize
	// stays unanswered) until the channel closes; launched is told first;
	// teardown, when set, holds the closing of its stdin (a stop's
	// teardown) until it closes.
	gate     chan struct{}
	teardown chan struct{}
	launched chan string

	loops   map[string]int // turn loops ended, by task
	loopEnd chan struct{}  // closed and replaced at each loop end
}

func newInProc(t *testing.T) *inProc {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(dir, "kandev.db"))
	if err != nil {
		t.Fatal(err)
	}
	home := core.Home{Dir: dir}
	if err := home.Ensure(); err != nil {
		t.Fatal(err)
	}
	p := &inProc{t: t, db: db, ctx: ctx, dir: dir, tokens: map[string]string{}, loops: map[string]int{}, loopEnd: make(chan struct{})}
	eng, err := engine.New(ctx, engine.Options{DB: db, Home: home, Launcher: engine.LauncherFunc(p.launch),
		// Teardown paces the in-process kill; the agents here end on EOF.
		Grace: agent.Grace{Cancel: time.Second, Interrupt: time.Second, Terminate: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	engine.OnLoopEnd(eng, func(id string) {
		p.mu.Lock()
		p.loops[id]++
		close(p.loopEnd)
		p.loopEnd = make(chan struct{})
		p.mu.Unlock()
	})
	p.eng = eng
	t.Cleanup(func() {
		if err := eng.Close(); err != nil {
			t.Error(err)
		}
		db.Close()
	})
	return p
}

// holdNextStart makes the next launched agent read nothing until release
// is called, and its stdin stay open (whatever tears it down) until
// releaseTeardown; launched says the launch happened (its session row
// exists).
func (p *inProc) holdNextStart() (launched <-chan string, release, releaseTeardown func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gate, p.teardown = make(chan struct{}), make(chan struct{})
	p.launched = make(chan string, 1)
	g, td := p.gate, p.teardown
	var once, tdOnce sync.Once
	return p.launched, func() { once.Do(func() { close(g) }) }, func() { tdOnce.Do(func() { close(td) }) }
}

// loopsEnded counts the task's turn loops that ended so far.
func (p *inProc) loopsEnded(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.loops[id]
}

// waitIdle waits until the task's turn loop is not running: every turn
// it had to deliver, and the checks after them, are done.
func (p *inProc) waitIdle(id string) {
	p.t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		p.mu.Lock()
		ch := p.loopEnd
		p.mu.Unlock()
		if !engine.LoopRunning(p.eng, id) {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			p.dump()
			p.t.Fatalf("task %s's turn loop never ended", id)
		}
	}
}

// waitLoopEnd waits until more than n of the task's turn loops ended.
func (p *inProc) waitLoopEnd(id string, n int) {
	p.t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		p.mu.Lock()
		done, ch := p.loops[id] > n, p.loopEnd
		p.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			p.dump()
			p.t.Fatalf("task %s's turn loop never ended", id)
		}
	}
}

// launch is the engine's Launcher: a mock agent in a goroutine on two OS
// pipes. OS pipes, not io.Pipe: a process's stdin is buffered, so a cancel
// or an initialize written to an agent that is not reading yet does not
// block the engine; an unbuffered io.Pipe would deadlock where a real agent
// never could.
func (p *inProc) launch(spec agent.Spec, h agent.Handler) (*agent.Run, error) {
	toAgentR, toAgentW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	fromAgentR, fromAgentW, err := os.Pipe()
	if err != nil {
		toAgentR.Close()
		toAgentW.Close()
		return nil, err
	}
	env := map[string]string{}
	for _, kv := range spec.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	for _, s := range spec.MCPServers {
		if s.Stdio == nil {
			continue
		}
		for _, e := range s.Stdio.Env {
			if e.Name == mcpserve.EnvToken {
				p.mu.Lock()
				p.tokens[spec.SessionID] = e.Value
				p.mu.Unlock()
			}
		}
	}
	var in io.Reader = toAgentR
	var stdin io.WriteCloser = toAgentW
	p.mu.Lock()
	if p.gate != nil {
		in = gatedReader{r: toAgentR, open: p.gate}
		stdin = heldCloser{WriteCloser: toAgentW, open: p.teardown}
		p.launched <- spec.SessionID
		p.gate, p.teardown, p.launched = nil, nil, nil
	}
	p.mu.Unlock()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var exitMu sync.Mutex
	var exitErr error
	go func() {
		defer close(done)
		err := mockagent.Serve(ctx, closerReader{in, toAgentR}, fromAgentW, mockagent.Options{
			Getenv: func(k string) string { return env[k] },
			ErrOut: io.Discard,
			Exit: func(code int) {
				exitMu.Lock()
				exitErr = fmt.Errorf("exit status %d", code)
				exitMu.Unlock()
				cancel()
			},
			DialMCP: p.dialMCP,
		})
		fromAgentW.Close()
		toAgentR.Close()
		exitMu.Lock()
		if exitErr == nil && err != nil && !errors.Is(err, context.Canceled) {
			exitErr = err
		}
		exitMu.Unlock()
	}()
	return agent.Attach(spec, h, agent.Peer{Stdin: stdin, Stdout: fromAgentR, Done: done,
		Err: func() error {
			exitMu.Lock()
			defer exitMu.Unlock()
			return exitErr
		},
		Kill: func() {
			exitMu.Lock()
			if exitErr == nil {
				exitErr = errors.New("signal: killed")
			}
			exitMu.Unlock()
			cancel()
		}}), nil
}

// dialMCP serves the session's kandev MCP server in process: the real
// bridge over pipes, its tools the engine's, its caller the one the
// session's token names (checked on every call, as the daemon does).
func (p *inProc) dialMCP(_ context.Context, server acp.McpServerStdio) (io.ReadWriteCloser, error) {
	env := map[string]string{}
	for _, e := range server.Env {
		env[e.Name] = e.Value
	}
	toSrvR, toSrvW := io.Pipe()
	fromSrvR, fromSrvW := io.Pipe()
	host := tokenHost{eng: p.eng, token: env[mcpserve.EnvToken]}
	go func() {
		err := mcpserve.Run(context.Background(), toSrvR, fromSrvW, func(k string) string { return env[k] },
			mcpserve.WithHost(host), mcpserve.WithStderr(io.Discard))
		fromSrvW.CloseWithError(err)
		toSrvR.Close()
	}()
	return mockagent.MCPStream(fromSrvR, toSrvW), nil
}

// tokenHost is the daemon's MCP route without HTTP: each call carries the
// session's token and is authenticated by the engine.
type tokenHost struct {
	eng   *engine.Engine
	token string
}

func (h tokenHost) ToolSurface(ctx context.Context) (api.ToolSurface, error) {
	actor, err := h.eng.Tools.Authenticate(ctx, h.token)
	if err != nil {
		return api.ToolSurface{}, err
	}
	return h.eng.Tools.ToolSurface(core.WithActor(ctx, actor))
}

func (h tokenHost) CallTool(ctx context.Context, name string, args []byte) (any, error) {
	actor, err := h.eng.Tools.Authenticate(ctx, h.token)
	if err != nil {
		return nil, err
	}
	return h.eng.Tools.CallTool(core.WithActor(ctx, actor), name, args)
}

// gatedReader holds reads until open closes.
type gatedReader struct {
	r    io.Reader
	open <-chan struct{}
}

func (g gatedReader) Read(b []byte) (int, error) {
	<-g.open
	return g.r.Read(b)
}

// heldCloser closes only once open closes.
type heldCloser struct {
	io.WriteCloser
	open <-chan struct{}
}

func (h heldCloser) Close() error {
	<-h.open
	return h.WriteCloser.Close()
}

// closerReader reads through r and closes c: the mock agent closes its
// input when it is told to end.
type closerReader struct {
	r io.Reader
	c io.Closer
}

func (c closerReader) Read(b []byte) (int, error) { return c.r.Read(b) }
func (c closerReader) Close() error               { return c.c.Close() }

// token is the MCP token the engine gave a session.
func (p *inProc) token(sessionID string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tokens[sessionID]
}

// create makes a task in a temp directory with the mock profile.
func (p *inProc) create(in api.CreateTaskInput) core.Task {
	p.t.Helper()
	if in.CWD == "" {
		in.CWD = p.dir
	}
	if in.Profile == "" {
		in.Profile = "mock"
	}
	task, err := p.eng.Tasks.CreateTask(p.op(), in)
	if err != nil {
		p.t.Fatal(err)
	}
	return task
}

// op is the operator's context.
func (p *inProc) op() context.Context { return core.WithActor(p.ctx, core.OperatorActor()) }

func (p *inProc) get(id string) core.Task {
	p.t.Helper()
	task, err := p.eng.Tasks.GetTask(p.ctx, id)
	if err != nil {
		p.t.Fatal(err)
	}
	return task
}

func (p *inProc) message(id, text string, delivery api.Delivery) {
	p.t.Helper()
	if _, err := p.eng.Messages.MessageTask(p.op(), id, api.MessageInput{Text: text, Delivery: delivery}); err != nil {
		p.t.Fatal(err)
	}
}

func (p *inProc) conversation(id string) []core.Message {
	p.t.Helper()
	page, err := p.eng.Messages.Conversation(p.ctx, id, api.ConversationInput{Limit: 1000})
	if err != nil {
		p.t.Fatal(err)
	}
	return page.Messages
}

// said is everything the task's agents said, in order.
func (p *inProc) said(id string) []string {
	var out []string
	for _, m := range p.conversation(id) {
		if m.Kind == core.MsgAgent {
			out = append(out, strings.TrimSpace(m.Text))
		}
	}
	return out
}

func (p *inProc) hasSaid(id, text string) bool {
	for _, s := range p.said(id) {
		if strings.Contains(s, text) {
			return true
		}
	}
	return false
}

// prompts is the text of every prompt delivered to the task, in order.
func (p *inProc) prompts(id string) []string {
	var out []string
	for _, m := range p.conversation(id) {
		if m.Kind == core.MsgPrompt {
			out = append(out, m.Text)
		}
	}
	return out
}

// waitFor re-checks cond after every engine event until it holds. The
// deadline only turns a hang into a failure; nothing is timed.
func (p *inProc) waitFor(what string, cond func() bool) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 2*time.Minute)
	defer cancel()
	events, err := p.eng.Events(ctx, api.EventsInput{})
	if err != nil {
		p.t.Fatal(err)
	}
	for !cond() {
		select {
		case _, ok := <-events:
			if !ok {
				p.t.Fatalf("waiting for %s: events ended", what)
			}
		case <-ctx.Done():
			p.dump()
			p.t.Fatalf("waiting for %s: never happened", what)
		}
	}
}

// settled: the task's latest run is not in a turn.
func (p *inProc) settled(id string) bool {
	s := p.get(id).Session
	return s != nil && s.State != core.SessionRunning && s.State != core.SessionStarting
}

// gateFile is a path a `mock: waitfile` waits on; open creates it.
func (p *inProc) gateFile(name string) (path string, open func()) {
	path = filepath.Join(p.dir, "gate-"+name)
	return path, func() {
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			p.t.Fatal(err)
		}
	}
}

func callDirective(tool string, args map[string]any) string {
	b, _ := json.Marshal(args)
	return "mock: call " + tool + " " + string(b)
}

// agentOf acts as the task's live agent, once it has one.
func (p *inProc) agentOf(id string) context.Context {
	p.t.Helper()
	p.waitFor("task "+id+"'s agent", func() bool {
		s := p.get(id).Session
		return s != nil && s.State.Live() && s.State != core.SessionStarting && p.token(s.ID) != ""
	})
	actor, err := p.eng.Tools.Authenticate(p.ctx, p.token(p.get(id).Session.ID))
	if err != nil {
		p.t.Fatal(err)
	}
	return core.WithActor(p.ctx, actor)
}

// dump logs every task and its conversation, to explain a wait that failed.
func (p *inProc) dump() {
	list, _ := p.eng.Tasks.ListTasks(p.ctx, api.ListTasksInput{})
	for _, task := range list {
		p.t.Logf("task %s %q status %s assignee %+v session %+v stalled %+v", task.ID, task.Title, task.Status, task.Assignee, task.Session, task.Stalled)
		for _, m := range p.conversation(task.ID) {
			p.t.Logf("   %d %s %s: %.200q", m.Seq, m.Kind, m.Author, m.Text)
		}
	}
}
