package mockagent

import (
	"encoding/json"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

func TestMcpServerJSONKeepsEmptyLists(t *testing.T) {
	s := acp.McpServer{Stdio: &acp.McpServerStdio{Name: "kandev", Command: "kandev", Args: []string{}, Env: []acp.EnvVariable{}}}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"args":[]`) || !strings.Contains(string(b), `"env":[]`) {
		t.Errorf("marshalled %s", b)
	}
	var back acp.McpServer
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Stdio == nil || back.Stdio.Args == nil || back.Stdio.Env == nil || back.Stdio.Name != "kandev" {
		t.Errorf("round trip lost the stdio server: %+v", back.Stdio)
	}

	b, err = json.Marshal(testServer())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"args":[]`) || strings.Contains(string(b), "null") {
		t.Errorf("test server marshalled %s", b)
	}
}

func TestCallAndTools(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	sid := h.newSession(testServer(acp.EnvVariable{Name: testTokenEnv, Value: "tok-1"}))
	got := h.mustPrompt(sid, strings.Join([]string{
		"mock: tools",
		`mock: call echo_struct {"task_id": "${task}", "n": 1}`,
		"task: abc",
		"mock: call forbidden",
		"mock: call text_json",
		"mock: call echo_struct {not json",
		"mock: call echo_struct",
	}, "\n"))
	want := strings.Join([]string{
		"tools: echo_struct, forbidden, slow, text_json, whoami",
		`result echo_struct: {"args":{"n":1,"task_id":"abc"},"token":"tok-1"}`,
		"error forbidden: FORBIDDEN: not yours",
		`result text_json: {"a":[1,2]}`,
		"error echo_struct: VALIDATION_ERROR: mock could not parse arguments: invalid character 'n' looking for beginning of object key string",
		`result echo_struct: {"args":{},"token":"tok-1"}`,
	}, "\n") + "\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}

	// The tool call and its update, as real agents report them.
	var starts []*acp.SessionUpdateToolCall
	final := map[acp.ToolCallId]acp.ToolCallStatus{}
	for _, n := range h.client.snapshot() {
		if tc := n.Update.ToolCall; tc != nil {
			starts = append(starts, tc)
		}
		if tu := n.Update.ToolCallUpdate; tu != nil && tu.Status != nil {
			final[tu.ToolCallId] = *tu.Status
			if tu.RawOutput == nil {
				t.Errorf("tool_call_update %s has no rawOutput", tu.ToolCallId)
			}
		}
	}
	if len(starts) != 4 {
		t.Fatalf("%d tool calls, want 4 (invalid arguments never reach MCP)", len(starts))
	}
	first := starts[0]
	if first.Title != "kandev: echo_struct" || first.Kind != acp.ToolKindOther || first.Status != acp.ToolCallStatusInProgress {
		t.Errorf("tool_call %+v", first)
	}
	if raw, _ := json.Marshal(first.RawInput); string(raw) != `{"n":1,"task_id":"abc"}` {
		t.Errorf("rawInput %s", raw)
	}
	if final[starts[0].ToolCallId] != acp.ToolCallStatusCompleted || final[starts[1].ToolCallId] != acp.ToolCallStatusFailed {
		t.Errorf("final statuses %v", final)
	}
	if starts[0].ToolCallId == starts[1].ToolCallId {
		t.Error("tool call ids repeat")
	}
}

// TestMCPServerLifecycle checks that the server starts once per session,
// knows the agent's client name, and is gone when Run returns.
func TestMCPServerLifecycle(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	sid := h.newSession(testServer())
	got := h.mustPrompt(sid, "mock: call whoami\nmock: call whoami")
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != 2 || lines[0] != lines[1] || !strings.HasPrefix(lines[0], "result whoami: kandev-mock-agent pid ") {
		t.Fatalf("got %q, want the same server twice", got)
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(lines[0], "result whoami: kandev-mock-agent pid "))
	if err != nil {
		t.Fatal(err)
	}
	h.close()
	if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
		t.Errorf("MCP server %d still exists after Run returned (kill 0: %v)", pid, err)
	}
}

func TestCallCancelsInFlight(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	sid := h.newSession(testServer())
	ch := h.promptAsync(sid, "mock: call slow\nmock: say never")
	started := h.client.waitUpdate(t, func(u acp.SessionUpdate) bool { return u.ToolCall != nil })
	time.Sleep(50 * time.Millisecond) // let the request reach the server
	h.cancel(sid)
	r := waitResult(t, ch)
	if r.err != nil || r.resp.StopReason != acp.StopReasonCancelled {
		t.Fatalf("got %+v, %v; want cancelled", r.resp, r.err)
	}
	h.client.waitUpdate(t, func(u acp.SessionUpdate) bool {
		tu := u.ToolCallUpdate
		return tu != nil && tu.ToolCallId == started.ToolCall.ToolCallId && tu.Status != nil && *tu.Status == acp.ToolCallStatusFailed
	})
	if got := h.client.messages(sid); got != "" {
		t.Errorf("said %q", got)
	}
	// The same server still answers the next turn.
	if got := h.mustPrompt(sid, "mock: call forbidden"); got != "error forbidden: FORBIDDEN: not yours\n" {
		t.Errorf("after cancel: %q", got)
	}
}

func TestCallWithoutUsableServer(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	none := h.newSession()
	got := h.mustPrompt(none, "mock: call whoami\nmock: tools")
	want := "error whoami: INTERNAL_ERROR: no stdio MCP server named \"kandev\" in this session\n" +
		"error tools: INTERNAL_ERROR: no stdio MCP server named \"kandev\" in this session\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}

	broken := testServer()
	broken.Stdio.Command = "/nonexistent/kandev"
	sid, err := h.conn.NewSession(h.ctx(), acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{broken}})
	if err != nil {
		t.Fatal(err)
	}
	got = h.mustPrompt(sid.SessionId, "mock: call whoami")
	if !strings.HasPrefix(got, "error whoami: INTERNAL_ERROR: start MCP server /nonexistent/kandev: ") {
		t.Errorf("got %q", got)
	}
}

// TestReactionCallsMCP is the parent that answers its child's question by
// itself, from the docs.
func TestReactionCallsMCP(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	sid := h.newSession(testServer())
	h.mustPrompt(sid, `mock: on question: call echo_struct {"task_id":"${child_task_id}","prompt":"use blue","reply_to_question_id":"${question_id}"}`)
	got := h.mustPrompt(sid, "[kandev:question]\nYour child task abc123 asks: which colour?\nquestion_id: q17\nchild_task_id: abc123")
	want := `result echo_struct: {"args":{"prompt":"use blue","reply_to_question_id":"q17","task_id":"abc123"},"token":""}` + "\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestResumeStartsServerFromNewList checks that a resumed session uses the
// MCP servers of the resume request.
func TestResumeStartsServerFromNewList(t *testing.T) {
	leakCheck(t)
	dir := t.TempDir()
	h1 := newHarness(t, map[string]string{"KANDEV_MOCK_STATE_DIR": dir})
	sid := h1.newSession()
	h1.close()

	h2 := newHarness(t, map[string]string{"KANDEV_MOCK_STATE_DIR": dir})
	h2.initialize()
	servers := []acp.McpServer{testServer(acp.EnvVariable{Name: testTokenEnv, Value: "resumed"})}
	if _, err := h2.conn.ResumeSession(h2.ctx(), acp.ResumeSessionRequest{SessionId: sid, Cwd: t.TempDir(), McpServers: servers}); err != nil {
		t.Fatal(err)
	}
	if got := h2.mustPrompt(sid, "mock: call echo_struct"); got != `result echo_struct: {"args":{},"token":"resumed"}`+"\n" {
		t.Errorf("got %q", got)
	}
	// Resuming the live session again swaps the server configuration.
	servers = []acp.McpServer{testServer(acp.EnvVariable{Name: testTokenEnv, Value: "again"})}
	if _, err := h2.conn.ResumeSession(h2.ctx(), acp.ResumeSessionRequest{SessionId: sid, Cwd: t.TempDir(), McpServers: servers}); err != nil {
		t.Fatal(err)
	}
	if got := h2.mustPrompt(sid, "mock: call echo_struct"); got != `result echo_struct: {"args":{},"token":"again"}`+"\n" {
		t.Errorf("got %q", got)
	}
}

// TestCalltime: `mock: calltime N TOOL` calls the tool N times without
// tool_call updates and says each call's duration.
func TestCalltime(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	sid := h.newSession(testServer(acp.EnvVariable{Name: testTokenEnv, Value: "tok-1"}))
	got := strings.TrimSpace(h.mustPrompt(sid, "mock: calltime 3 echo_struct {\"n\": 1}\nmock: calltime x echo_struct\nmock: calltime 1 forbidden"))
	lines := strings.Split(got, "\n")
	if len(lines) != 3 {
		t.Fatalf("got %q", got)
	}
	f := strings.Fields(strings.TrimPrefix(lines[0], "calltime echo_struct: "))
	if !strings.HasPrefix(lines[0], "calltime echo_struct: ") || len(f) != 3 {
		t.Fatalf("calltime line %q", lines[0])
	}
	for _, us := range f {
		if _, err := strconv.Atoi(us); err != nil {
			t.Fatalf("duration %q: %v", us, err)
		}
	}
	if lines[1] != "error mock: calltime needs a count and a tool name" || lines[2] != "error forbidden: FORBIDDEN: not yours" {
		t.Fatalf("errors: %q", lines[1:])
	}
	for _, n := range h.client.snapshot() {
		if n.Update.ToolCall != nil {
			t.Fatal("calltime reported a tool_call")
		}
	}
}
