package mockagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// agent implements acp.Agent (and acp.AgentLoader) for one connection.
type agent struct {
	conn   *acp.AgentSideConnection
	base   context.Context // ends when Run returns
	out    *guardedWriter
	errOut io.Writer
	logger *slog.Logger
	exit   func(int)
	getenv func(string) string
	store  store
	dial   MCPDialer

	initDelay time.Duration
	resume    bool // advertise sessionCapabilities.resume
	load      bool // advertise loadSession
	// brokenResume advertises session/resume but fails it, as Qwen Code
	// does; session/load works.
	brokenResume bool
	// cancelMode is how a cancelled turn ends: "" (stopReason cancelled),
	// "error" (a JSON-RPC error, as Qwen Code answers), "forget" (cancelled,
	// and the session forgets that turn's prompt, as Gemini CLI does).
	cancelMode string

	// mcpPermission is how the agent asks before each MCP tool call
	// (KANDEV_MOCK_MCP_PERMISSION): "" not at all, "qwen" as Qwen Code.
	mcpPermission string
	// lateReplay streams session/load's replay after its answer
	// (KANDEV_MOCK_LATE_REPLAY, Gemini CLI).
	lateReplay bool

	// authVar, when set (KANDEV_MOCK_AUTH=env:VAR, Codex's codex-acp),
	// makes the agent advertise an env_var authentication method reading
	// VAR and refuse session/new with "Authentication required" until the
	// client authenticates with it while VAR is set.
	authVar       string
	authenticated bool

	handlers *tracker
	// replayN is how many updates session/load replays (KANDEV_MOCK_REPLAY).
	replayN int

	mu       sync.Mutex
	sessions map[string]*session
}

var (
	_ acp.Agent       = (*agent)(nil)
	_ acp.AgentLoader = (*agent)(nil)
)

func newAgent(ctx context.Context, cfg config, out *guardedWriter, errOut io.Writer, logger *slog.Logger) (*agent, error) {
	a := &agent{
		base:     ctx,
		out:      out,
		errOut:   errOut,
		logger:   logger,
		exit:     cfg.exit,
		dial:     cfg.dial,
		getenv:   cfg.getenv,
		handlers: newTracker(),
		sessions: map[string]*session{},
	}
	a.store.dir, a.store.private = stateDir(cfg.getenv)
	switch mode := cfg.getenv("KANDEV_MOCK_RESUME"); mode {
	case "", "resume":
		a.resume = true
	case "load":
		a.load = true
	case "both":
		a.resume, a.load = true, true
	case "none":
	case "broken":
		a.resume, a.load, a.brokenResume = true, true, true
	default:
		return nil, fmt.Errorf("KANDEV_MOCK_RESUME=%q: want resume, load, both, broken or none", mode)
	}
	switch mode := cfg.getenv("KANDEV_MOCK_CANCEL"); mode {
	case "", "stop":
	case "error", "forget":
		a.cancelMode = mode
	default:
		return nil, fmt.Errorf("KANDEV_MOCK_CANCEL=%q: want stop, error or forget", mode)
	}
	if n := cfg.getenv("KANDEV_MOCK_REPLAY"); n != "" {
		v, err := strconv.Atoi(n)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("KANDEV_MOCK_REPLAY=%q: want a count", n)
		}
		a.replayN = v
	}
	switch mode := cfg.getenv("KANDEV_MOCK_MCP_PERMISSION"); mode {
	case "", "qwen":
		a.mcpPermission = mode
	default:
		return nil, fmt.Errorf("KANDEV_MOCK_MCP_PERMISSION=%q: want qwen", mode)
	}
	if mode := cfg.getenv("KANDEV_MOCK_AUTH"); mode != "" {
		v, ok := strings.CutPrefix(mode, "env:")
		if !ok || v == "" {
			return nil, fmt.Errorf("KANDEV_MOCK_AUTH=%q: want env:VAR", mode)
		}
		a.authVar = v
	}
	a.lateReplay = cfg.getenv("KANDEV_MOCK_LATE_REPLAY") != ""
	if d := cfg.getenv("KANDEV_MOCK_INIT_DELAY"); d != "" {
		delay, err := time.ParseDuration(d)
		if err != nil {
			return nil, fmt.Errorf("KANDEV_MOCK_INIT_DELAY: %w", err)
		}
		a.initDelay = delay
	}
	return a, nil
}

// errShuttingDown answers requests that arrive while Run is returning.
var errShuttingDown = errors.New("mock agent is shutting down")

// track wraps every handler so that Run can wait for it to finish.
func (a *agent) track() (done func(), err error) {
	if !a.handlers.enter() {
		return nil, errShuttingDown
	}
	return a.handlers.leave, nil
}

// scope derives a handler's context: the SDK cancels reqCtx on
// session/cancel and on disconnect, and Run's own context must end long
// waits too.
func (a *agent) scope(reqCtx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(reqCtx)
	stop := context.AfterFunc(a.base, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// shutdown waits for handlers and stops every MCP server.
func (a *agent) shutdown() {
	a.handlers.closeAndWait()
	a.mu.Lock()
	sessions := a.sessions
	a.sessions = map[string]*session{}
	a.mu.Unlock()
	for _, s := range sessions {
		s.closeMCP()
	}
}

func (a *agent) Initialize(ctx context.Context, _ acp.InitializeRequest) (acp.InitializeResponse, error) {
	done, err := a.track()
	if err != nil {
		return acp.InitializeResponse{}, err
	}
	defer done()
	ctx, cancel := a.scope(ctx)
	defer cancel()
	if err := sleep(ctx, a.initDelay); err != nil {
		return acp.InitializeResponse{}, fmt.Errorf("initialize: %w", err)
	}
	caps := acp.AgentCapabilities{LoadSession: a.load}
	if a.resume {
		caps.SessionCapabilities.Resume = &acp.SessionResumeCapabilities{}
	}
	methods := []acp.AuthMethod{}
	if a.authVar != "" {
		// As codex-acp lists its methods: a login first, then the keys.
		methods = append(methods,
			acp.AuthMethod{Agent: &acp.AuthMethodAgent{Id: "login", Name: "Log in"}},
			acp.AuthMethod{EnvVar: &acp.AuthMethodEnvVarInline{Type: "env_var", Id: mockAuthMethod, Name: "Use " + a.authVar,
				Vars: []acp.AuthEnvVar{{Name: a.authVar}}}})
	}
	return acp.InitializeResponse{
		ProtocolVersion:   acp.ProtocolVersionNumber,
		AgentCapabilities: caps,
		AgentInfo:         &acp.Implementation{Name: "kandev-mock-agent", Title: acp.Ptr("kandev mock agent"), Version: "1"},
		AuthMethods:       methods,
	}, nil
}

// mockAuthMethod is the env_var method KANDEV_MOCK_AUTH advertises.
const mockAuthMethod = "mock-api-key"

func (a *agent) Authenticate(_ context.Context, req acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	if a.authVar == "" {
		return acp.AuthenticateResponse{}, nil
	}
	if req.MethodId != mockAuthMethod || a.getenv(a.authVar) == "" {
		return acp.AuthenticateResponse{}, acp.NewAuthRequired(map[string]any{"method": req.MethodId})
	}
	a.mu.Lock()
	a.authenticated = true
	a.mu.Unlock()
	return acp.AuthenticateResponse{}, nil
}

// needsAuth is Codex's refusal of a session before authenticate.
func (a *agent) needsAuth() error {
	if a.authVar == "" {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.authenticated {
		return nil
	}
	return acp.NewAuthRequired(nil)
}

func (a *agent) NewSession(_ context.Context, req acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	done, err := a.track()
	if err != nil {
		return acp.NewSessionResponse{}, err
	}
	defer done()
	if err := a.needsAuth(); err != nil {
		return acp.NewSessionResponse{}, err
	}
	id, err := newSessionID()
	if err != nil {
		return acp.NewSessionResponse{}, err
	}
	s := a.newSession(sessionState{SessionID: id, Cwd: req.Cwd}, req.McpServers)
	if err := a.store.save(s.state); err != nil {
		s.closeMCP()
		return acp.NewSessionResponse{}, fmt.Errorf("new session: %w", err)
	}
	a.addSession(s)
	return acp.NewSessionResponse{SessionId: acp.SessionId(id)}, nil
}

func (a *agent) ResumeSession(_ context.Context, req acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	done, err := a.track()
	if err != nil {
		return acp.ResumeSessionResponse{}, err
	}
	defer done()
	if !a.resume {
		return acp.ResumeSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionResume)
	}
	if a.brokenResume {
		return acp.ResumeSessionResponse{}, &acp.RequestError{Code: -32603, Message: "session/resume is not implemented"}
	}
	if err := a.reopen(string(req.SessionId), req.Cwd, req.McpServers); err != nil {
		return acp.ResumeSessionResponse{}, fmt.Errorf("resume session: %w", err)
	}
	return acp.ResumeSessionResponse{}, nil
}

func (a *agent) LoadSession(ctx context.Context, req acp.LoadSessionRequest) (acp.LoadSessionResponse, error) {
	done, err := a.track()
	if err != nil {
		return acp.LoadSessionResponse{}, err
	}
	defer done()
	if !a.load {
		return acp.LoadSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionLoad)
	}
	// session/load replays the conversation first: the history the mock
	// keeps, or KANDEV_MOCK_REPLAY made-up updates when that is set.
	if err := a.reopen(string(req.SessionId), req.Cwd, req.McpServers); err != nil {
		return acp.LoadSessionResponse{}, fmt.Errorf("load session: %w", err)
	}
	switch {
	case a.lateReplay:
		// Gemini CLI answers first and streams the history after the
		// answer (its streamHistory is not awaited).
		a.replayAfterAnswer(ctx, req.SessionId)
	case a.replayN > 0:
		a.replayBurst(req.SessionId, a.replayN)
	default:
		a.replay(ctx, req.SessionId)
	}
	return acp.LoadSessionResponse{}, nil
}

// replay streams the session's history before the session/load response,
// as real agents do: for every earlier prompt, the user's message, the
// agent's answer and a completed tool call. The mock keeps only each
// prompt's first line, so that is what it replays.
func (a *agent) replay(ctx context.Context, sid acp.SessionId) {
	for _, u := range a.history(ctx, sid) {
		if err := a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: u}); err != nil {
			a.logger.Debug("replay", "session", sid, "err", err)
		}
	}
}

// history is what a load replays of a session: for every earlier prompt,
// the user's message, the agent's answer and a completed tool call.
func (a *agent) history(ctx context.Context, sid acp.SessionId) []acp.SessionUpdate {
	s := a.session(string(sid))
	if s == nil || s.acquire(ctx) != nil {
		return nil
	}
	prompts := slices.Clone(s.state.Prompts)
	s.release()
	var out []acp.SessionUpdate
	for i, p := range prompts {
		id := acp.ToolCallId(fmt.Sprintf("mock-replay-%d", i+1))
		out = append(out,
			acp.SessionUpdate{UserMessageChunk: &acp.SessionUpdateUserMessageChunk{Content: acp.TextBlock(p)}},
			acp.UpdateAgentMessageText("replayed: "+p+"\n"),
			acp.StartToolCall(id, "replayed tool", acp.WithStartKind(acp.ToolKindExecute),
				acp.WithStartStatus(acp.ToolCallStatusCompleted)))
	}
	return out
}

// replayAfterAnswer streams the history right after the session/load
// answer, as Gemini CLI does. The notifications go out in the same write
// as the answer, so a client reads them after it and, always, before it
// can send anything more: a test of how late replays are told apart from
// new conversation then never depends on timing.
func (a *agent) replayAfterAnswer(ctx context.Context, sid acp.SessionId) {
	var buf []byte
	for _, u := range a.history(ctx, sid) {
		b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": acp.ClientMethodSessionUpdate,
			"params": acp.SessionNotification{SessionId: sid, Update: u}})
		if err != nil {
			a.logger.Debug("late replay", "err", err)
			return
		}
		buf = append(append(buf, b...), '\n')
	}
	a.out.afterNextResponse(buf)
}

// reopen makes a persisted (or live) session current with the MCP servers
// of the new request.
func (a *agent) reopen(id, cwd string, servers []acp.McpServer) error {
	if s := a.session(id); s != nil {
		s.setServers(servers)
		return nil
	}
	st, err := a.store.load(id)
	if err != nil {
		return err
	}
	if cwd != "" {
		st.Cwd = cwd
	}
	s := a.newSession(st, servers)
	if prev := a.addSession(s); prev != nil {
		// Another request reopened it meanwhile; keep that one.
		s.closeMCP()
	}
	return nil
}

func (a *agent) newSession(st sessionState, servers []acp.McpServer) *session {
	return &session{
		state: st,
		turn:  make(chan struct{}, 1),
		mcp:   newMCPConn(servers, a.errOut, a.logger, a.dial),
	}
}

// addSession registers s unless a session with its id exists; it returns
// the existing one in that case.
func (a *agent) addSession(s *session) *session {
	a.mu.Lock()
	defer a.mu.Unlock()
	if prev, ok := a.sessions[s.state.SessionID]; ok {
		return prev
	}
	a.sessions[s.state.SessionID] = s
	return nil
}

func (a *agent) session(id string) *session {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[id]
}

func (a *agent) Prompt(reqCtx context.Context, req acp.PromptRequest) (acp.PromptResponse, error) {
	done, err := a.track()
	if err != nil {
		return acp.PromptResponse{}, err
	}
	defer done()
	s := a.session(string(req.SessionId))
	if s == nil {
		return acp.PromptResponse{}, acp.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown session %q", req.SessionId)})
	}
	ctx, cancel := a.scope(reqCtx)
	defer cancel()
	return a.runTurn(ctx, s, promptText(req.Prompt))
}

// promptText joins the prompt's text blocks; the interpreter reads lines.
func promptText(blocks []acp.ContentBlock) string {
	var parts []string
	for _, b := range blocks {
		switch {
		case b.Text != nil:
			parts = append(parts, b.Text.Text)
		case b.Resource != nil && b.Resource.Resource.TextResourceContents != nil:
			parts = append(parts, b.Resource.Resource.TextResourceContents.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Cancel needs no work: the SDK already cancels the turn's context.
func (a *agent) Cancel(context.Context, acp.CancelNotification) error { return nil }

func (a *agent) CloseSession(_ context.Context, req acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	done, err := a.track()
	if err != nil {
		return acp.CloseSessionResponse{}, err
	}
	defer done()
	a.mu.Lock()
	s := a.sessions[string(req.SessionId)]
	delete(a.sessions, string(req.SessionId))
	a.mu.Unlock()
	if s != nil {
		s.closeMCP()
	}
	return acp.CloseSessionResponse{}, nil
}

func (a *agent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionList)
}

func (a *agent) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionSetMode)
}

func (a *agent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionSetConfigOption)
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
