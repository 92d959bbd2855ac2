package mockagent

import (
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// `mock: exec` asks as codex-acp does, the request carrying the call, and
// once approved announces the same call again as it runs it.
func TestCodexExec(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	h.client.answer = func(req acp.RequestPermissionRequest) acp.RequestPermissionResponse {
		if strings.Contains(*req.ToolCall.Title, "rm") {
			return selectOption("abort")
		}
		return selectOption("approved")
	}
	sid := h.newSession()
	if got := h.mustPrompt(sid, "mock: exec go version\nmock: exec rm -rf x"); got != "exec: ran go version\nexec: rejected\n" {
		t.Fatalf("said %q", got)
	}
	h.client.mu.Lock()
	perms := append([]acp.RequestPermissionRequest(nil), h.client.permissions...)
	h.client.mu.Unlock()
	if len(perms) != 2 || *perms[0].ToolCall.Status != acp.ToolCallStatusPending || *perms[0].ToolCall.Kind != acp.ToolKindExecute {
		t.Fatalf("permission requests %+v", perms)
	}
	id := perms[0].ToolCall.ToolCallId
	var started, completed int
	for _, n := range h.client.snapshot() {
		if u := n.Update.ToolCall; u != nil {
			if u.ToolCallId != id || u.Status != acp.ToolCallStatusInProgress {
				t.Errorf("tool_call %+v", u)
			}
			started++
		}
		if u := n.Update.ToolCallUpdate; u != nil && u.ToolCallId == id && *u.Status == acp.ToolCallStatusCompleted {
			completed++
		}
	}
	if started != 1 || completed != 1 {
		t.Fatalf("approved call: %d tool_call, %d completed; want the request's call announced again once", started, completed)
	}
}

// KANDEV_MOCK_MCP_PERMISSION=qwen asks before a call with the arguments as
// title and the tool's name only in the labels.
func TestQwenMCPPermission(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, map[string]string{"KANDEV_MOCK_MCP_PERMISSION": "qwen"})
	h.client.answer = func(acp.RequestPermissionRequest) acp.RequestPermissionResponse { return selectOption("cancel") }
	sid := h.newSession()
	if got := h.mustPrompt(sid, `mock: call handoff_task_kandev {"to":"back"}`); got != "error handoff_task_kandev: permission refused\n" {
		t.Fatalf("said %q", got)
	}
	h.client.mu.Lock()
	defer h.client.mu.Unlock()
	if len(h.client.permissions) != 1 {
		t.Fatalf("%d permission requests", len(h.client.permissions))
	}
	req := h.client.permissions[0]
	if *req.ToolCall.Title != `{"to":"back"}` || *req.ToolCall.Kind != acp.ToolKindOther {
		t.Fatalf("request %+v", req.ToolCall)
	}
	var labels []string
	for _, o := range req.Options {
		labels = append(labels, string(o.Name))
	}
	if !strings.Contains(strings.Join(labels, "|"), "Always Allow in project: handoff_task_kandev") {
		t.Fatalf("labels %q", labels)
	}
	for _, n := range h.client.updates {
		if n.Update.ToolCall != nil {
			t.Fatalf("a tool_call announced the call: %+v", n.Update.ToolCall)
		}
	}
}

// KANDEV_MOCK_LATE_REPLAY streams the history after session/load's answer
// (Gemini CLI), in the same write.
func TestLateReplay(t *testing.T) {
	leakCheck(t)
	dir := t.TempDir()
	h := newHarness(t, map[string]string{"KANDEV_MOCK_STATE_DIR": dir, "KANDEV_MOCK_RESUME": "load"})
	sid := h.newSession()
	h.mustPrompt(sid, "first prompt")
	h.close()

	h2 := newHarness(t, map[string]string{"KANDEV_MOCK_STATE_DIR": dir, "KANDEV_MOCK_RESUME": "load", "KANDEV_MOCK_LATE_REPLAY": "1"})
	h2.initialize()
	if _, err := h2.conn.LoadSession(h2.ctx(), acp.LoadSessionRequest{SessionId: sid, Cwd: t.TempDir(), McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	h2.client.waitUpdate(t, func(u acp.SessionUpdate) bool {
		return u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil && u.AgentMessageChunk.Content.Text.Text == "replayed: first prompt\n"
	})
}

func TestIsResponse(t *testing.T) {
	for in, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":3,"result":{}}`:                           true,
		`{"jsonrpc":"2.0","id":"a","error":{"code":1}}`:                  true,
		`{"jsonrpc":"2.0","method":"session/update","params":{}}`:        false,
		`{"jsonrpc":"2.0","id":4,"method":"session/request_permission"}`: false,
		`not json`: false,
	} {
		if got := isResponse([]byte(in)); got != want {
			t.Errorf("isResponse(%s) = %v", in, got)
		}
	}
}
