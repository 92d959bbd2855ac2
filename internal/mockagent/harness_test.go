package mockagent

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"go.uber.org/goleak"
)

// waitTimeout bounds every wait in these tests; nothing legitimate takes
// this long.
const waitTimeout = 10 * time.Second

func TestMain(m *testing.M) {
	// The test binary doubles as the MCP server the agent connects to.
	if os.Getenv(testMCPServerEnv) == "1" {
		if err := serveTestMCP(); err != nil {
			os.Stderr.WriteString("test MCP server: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	// ... and the agent process for TestProcess.
	if os.Getenv(testAgentEnv) == "1" {
		if err := Run(context.Background(), os.Stdin, os.Stdout, os.Stderr, os.Getenv); err != nil {
			os.Stderr.WriteString("mock agent: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// leakCheck verifies, after every other cleanup of t has run, that the test
// left no goroutine behind. Call it first in a test.
func leakCheck(t *testing.T) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testClient is the ACP client side: it records what the agent sends.
type testClient struct {
	mu          sync.Mutex
	updates     []acp.SessionNotification
	permissions []acp.RequestPermissionRequest
	// answer decides permission requests; nil answers "allow".
	answer func(acp.RequestPermissionRequest) acp.RequestPermissionResponse
}

var _ acp.Client = (*testClient)(nil)

func (c *testClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates = append(c.updates, n)
	return nil
}

func (c *testClient) RequestPermission(_ context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.permissions = append(c.permissions, req)
	answer := c.answer
	c.mu.Unlock()
	if answer != nil {
		return answer(req), nil
	}
	return selectOption("allow"), nil
}

func selectOption(id string) acp.RequestPermissionResponse {
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{
		Selected: &acp.RequestPermissionOutcomeSelected{OptionId: acp.PermissionOptionId(id)}}}
}

func (c *testClient) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsReadTextFile)
}

func (c *testClient) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsWriteTextFile)
}

func (c *testClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalCreate)
}

func (c *testClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalKill)
}

func (c *testClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalOutput)
}

func (c *testClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalRelease)
}

func (c *testClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalWaitForExit)
}

func (c *testClient) snapshot() []acp.SessionNotification {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]acp.SessionNotification(nil), c.updates...)
}

// messages concatenates the agent_message_chunk text sent for sid.
func (c *testClient) messages(sid acp.SessionId) string {
	var b strings.Builder
	for _, n := range c.snapshot() {
		if n.SessionId == sid && n.Update.AgentMessageChunk != nil && n.Update.AgentMessageChunk.Content.Text != nil {
			b.WriteString(n.Update.AgentMessageChunk.Content.Text.Text)
		}
	}
	return b.String()
}

// waitMessages waits until the transcript of sid contains want.
func (c *testClient) waitMessages(t *testing.T, sid acp.SessionId, want string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !strings.Contains(c.messages(sid), want) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %q; transcript:\n%s", want, c.messages(sid))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitUpdate waits for an update matching ok and returns it.
func (c *testClient) waitUpdate(t *testing.T, ok func(acp.SessionUpdate) bool) acp.SessionUpdate {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		for _, n := range c.snapshot() {
			if ok(n.Update) {
				return n.Update
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for a session update")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// harness runs one agent in-process, wired to an ACP client over pipes.
type harness struct {
	t       *testing.T
	client  *testClient
	conn    *acp.ClientSideConnection
	toAgent *io.PipeWriter // client → agent
	fromIn  *io.PipeWriter // agent → client, closed after Run returns
	wire    *syncBuffer    // everything the agent wrote
	errOut  *syncBuffer
	exits   chan int
	runDone chan error
	closed  bool
}

// newHarness starts an agent whose environment is env; the state dir is
// fresh unless env has KANDEV_MOCK_STATE_DIR (empty: the agent's default).
func newHarness(t *testing.T, env map[string]string) *harness {
	t.Helper()
	if env == nil {
		env = map[string]string{}
	}
	if _, ok := env["KANDEV_MOCK_STATE_DIR"]; !ok {
		env["KANDEV_MOCK_STATE_DIR"] = t.TempDir()
	}
	agentIn, toAgent := io.Pipe()
	fromAgent, agentOut := io.Pipe()
	h := &harness{
		t:       t,
		client:  &testClient{},
		toAgent: toAgent,
		fromIn:  agentOut,
		wire:    &syncBuffer{},
		errOut:  &syncBuffer{},
		exits:   make(chan int, 1),
		runDone: make(chan error, 1),
	}
	cfg := config{
		in:     agentIn,
		out:    agentOut,
		errOut: h.errOut,
		getenv: func(k string) string { return env[k] },
		exit:   func(code int) { h.exits <- code },
	}
	go func() { h.runDone <- run(context.Background(), cfg) }()
	h.conn = acp.NewClientSideConnection(h.client, toAgent, io.TeeReader(fromAgent, h.wire))
	h.conn.SetLogger(slog.New(slog.DiscardHandler))
	t.Cleanup(h.close)
	return h
}

// close disconnects the client and checks that Run returned nil.
func (h *harness) close() {
	h.t.Helper()
	if h.closed {
		return
	}
	h.closed = true
	_ = h.toAgent.Close()
	select {
	case err := <-h.runDone:
		if err != nil {
			h.t.Errorf("Run returned %v, want nil", err)
		}
	case <-time.After(waitTimeout):
		h.t.Fatal("Run did not return after EOF")
	}
	_ = h.fromIn.Close()
	select {
	case <-h.conn.Done():
	case <-time.After(waitTimeout):
		h.t.Fatal("client connection did not close")
	}
}

func (h *harness) ctx() context.Context { return testCtx(h.t) }

// testCtx bounds a client call; it ends with the test.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

func (h *harness) initialize() acp.InitializeResponse {
	h.t.Helper()
	resp, err := h.conn.Initialize(h.ctx(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber})
	if err != nil {
		h.t.Fatalf("initialize: %v", err)
	}
	return resp
}

// newSession initializes the connection and opens a session.
func (h *harness) newSession(servers ...acp.McpServer) acp.SessionId {
	h.t.Helper()
	h.initialize()
	resp, err := h.conn.NewSession(h.ctx(), acp.NewSessionRequest{Cwd: h.t.TempDir(), McpServers: orEmpty(servers)})
	if err != nil {
		h.t.Fatalf("session/new: %v", err)
	}
	return resp.SessionId
}

func (h *harness) prompt(sid acp.SessionId, text string) (acp.PromptResponse, error) {
	return h.conn.Prompt(h.ctx(), acp.PromptRequest{SessionId: sid, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
}

// mustPrompt runs a turn that must end with end_turn and returns the text
// the agent said during it.
func (h *harness) mustPrompt(sid acp.SessionId, text string) string {
	h.t.Helper()
	before := len(h.client.messages(sid))
	resp, err := h.prompt(sid, text)
	if err != nil {
		h.t.Fatalf("prompt %q: %v", text, err)
	}
	if resp.StopReason != acp.StopReasonEndTurn {
		h.t.Fatalf("prompt %q: stop reason %q, want end_turn", text, resp.StopReason)
	}
	return h.client.messages(sid)[before:]
}

// promptAsync starts a turn and returns a channel with its outcome.
func (h *harness) promptAsync(sid acp.SessionId, text string) <-chan promptResult {
	ch := make(chan promptResult, 1)
	go func() {
		resp, err := h.prompt(sid, text)
		ch <- promptResult{resp, err}
	}()
	return ch
}

type promptResult struct {
	resp acp.PromptResponse
	err  error
}

func (h *harness) cancel(sid acp.SessionId) {
	h.t.Helper()
	if err := h.conn.Cancel(h.ctx(), acp.CancelNotification{SessionId: sid}); err != nil {
		h.t.Fatalf("session/cancel: %v", err)
	}
}

func waitResult(t *testing.T, ch <-chan promptResult) promptResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(waitTimeout):
		t.Fatal("prompt did not return")
		return promptResult{}
	}
}

func orEmpty(s []acp.McpServer) []acp.McpServer {
	if s == nil {
		return []acp.McpServer{}
	}
	return s
}
