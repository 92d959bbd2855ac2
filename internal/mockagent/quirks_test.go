package mockagent

import (
	"errors"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// KANDEV_MOCK_CANCEL models how real agents answer a cancel.
func TestCancelModes(t *testing.T) {
	for _, mode := range []string{"stop", "error", "forget"} {
		t.Run(mode, func(t *testing.T) {
			leakCheck(t)
			h := newHarness(t, map[string]string{"KANDEV_MOCK_CANCEL": mode})
			sid := h.newSession()
			h.mustPrompt(sid, "first prompt")
			ch := h.promptAsync(sid, "hung prompt\nmock: say started\nmock: hang")
			h.client.waitMessages(t, sid, "started\n")
			h.cancel(sid)
			r := waitResult(t, ch)
			var rpcErr *acp.RequestError
			switch mode {
			case "error":
				if !errors.As(r.err, &rpcErr) || rpcErr.Code != -32603 || rpcErr.Message != "Request was aborted" {
					t.Fatalf("got %+v, %v; want the -32603 Request was aborted error", r.resp, r.err)
				}
			default:
				if r.err != nil || r.resp.StopReason != acp.StopReasonCancelled {
					t.Fatalf("got %+v, %v; want cancelled", r.resp, r.err)
				}
			}
			got := h.mustPrompt(sid, "mock: history")
			remembers := strings.Contains(got, "hung prompt")
			if remembers == (mode == "forget") {
				t.Errorf("mode %s: history %q", mode, got)
			}
			if !strings.Contains(got, "first prompt") {
				t.Errorf("the turn before the cancel was forgotten: %q", got)
			}
		})
	}
}

// KANDEV_MOCK_RESUME=broken advertises resume and fails it, like Qwen
// Code; session/load works and replays the history before it answers.
func TestBrokenResumeAndLoadReplay(t *testing.T) {
	leakCheck(t)
	dir := t.TempDir()
	h := newHarness(t, map[string]string{"KANDEV_MOCK_STATE_DIR": dir})
	sid := h.newSession()
	h.mustPrompt(sid, "first prompt\nmock: say one")
	h.close()

	h2 := newHarness(t, map[string]string{"KANDEV_MOCK_STATE_DIR": dir, "KANDEV_MOCK_RESUME": "broken"})
	caps := h2.initialize().AgentCapabilities
	if caps.SessionCapabilities.Resume == nil || !caps.LoadSession {
		t.Fatalf("broken mode must advertise both: %+v", caps)
	}
	if _, err := h2.conn.ResumeSession(h2.ctx(), acp.ResumeSessionRequest{SessionId: sid, Cwd: t.TempDir(), McpServers: []acp.McpServer{}}); err == nil {
		t.Fatal("session/resume worked in broken mode")
	}
	if _, err := h2.conn.LoadSession(h2.ctx(), acp.LoadSessionRequest{SessionId: sid, Cwd: t.TempDir(), McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	// The SDK hands notifications sent before a response over first, so
	// the replay is complete when LoadSession returns.
	var user, agent, tools int
	for _, n := range h2.client.snapshot() {
		switch u := n.Update; {
		case u.UserMessageChunk != nil && u.UserMessageChunk.Content.Text != nil && u.UserMessageChunk.Content.Text.Text == "first prompt":
			user++
		case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil && u.AgentMessageChunk.Content.Text.Text == "replayed: first prompt\n":
			agent++
		case u.ToolCall != nil && u.ToolCall.Title == "replayed tool":
			tools++
		}
	}
	if user != 1 || agent != 1 || tools != 1 {
		t.Fatalf("replay: %d user, %d agent, %d tool updates; want one each", user, agent, tools)
	}
	if got := h2.mustPrompt(sid, "mock: history"); !strings.Contains(got, "turn 2; earlier: first prompt") {
		t.Errorf("loaded session: %q", got)
	}
}

func TestChatter(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	sid := h.newSession()
	got := h.mustPrompt(sid, "mock: chatter 350ms\nmock: say quiet")
	if !strings.HasPrefix(got, "chatter 1 ") || !strings.HasSuffix(got, "quiet\n") {
		t.Fatalf("chatter: %q", got)
	}
	// Cancelled while chattering, it stops.
	ch := h.promptAsync(sid, "mock: chatter 1h\nmock: say never")
	h.client.waitMessages(t, sid, "quiet\nchatter 1 ")
	h.cancel(sid)
	if r := waitResult(t, ch); r.err != nil || r.resp.StopReason != acp.StopReasonCancelled {
		t.Fatalf("got %+v, %v; want cancelled", r.resp, r.err)
	}
}

// `mock: permitted` announces a tool call only in its permission request.
func TestPermitted(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	sid := h.newSession()
	h.mustPrompt(sid, "mock: permitted rm -rf build")
	var announced, completed bool
	for _, n := range h.client.snapshot() {
		if n.Update.ToolCall != nil {
			announced = true
		}
		if tu := n.Update.ToolCallUpdate; tu != nil && tu.Status != nil && *tu.Status == acp.ToolCallStatusCompleted && tu.Title == nil {
			completed = true
		}
	}
	h.client.mu.Lock()
	perms := append([]acp.RequestPermissionRequest(nil), h.client.permissions...)
	h.client.mu.Unlock()
	if announced || !completed || len(perms) != 1 || perms[0].ToolCall.Title == nil || *perms[0].ToolCall.Title != "rm -rf build" {
		t.Fatalf("announced %v completed %v permissions %+v", announced, completed, perms)
	}
}
