package mockagent

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

func TestInitializeAdvertisesResumeByDefault(t *testing.T) {
	leakCheck(t)
	for mode, want := range map[string][2]bool{
		"":       {true, false},
		"resume": {true, false},
		"load":   {false, true},
		"both":   {true, true},
		"none":   {false, false},
		"broken": {true, true},
	} {
		h := newHarness(t, map[string]string{"KANDEV_MOCK_RESUME": mode})
		resp := h.initialize()
		caps := resp.AgentCapabilities
		got := [2]bool{caps.SessionCapabilities.Resume != nil, caps.LoadSession}
		if got != want {
			t.Errorf("KANDEV_MOCK_RESUME=%q: resume, load = %v, want %v", mode, got, want)
		}
		if resp.ProtocolVersion != acp.ProtocolVersionNumber {
			t.Errorf("protocol version %d", resp.ProtocolVersion)
		}
		h.close()
	}
}

func TestBadEnvironmentFailsRun(t *testing.T) {
	for k, v := range map[string]string{"KANDEV_MOCK_RESUME": "sometimes", "KANDEV_MOCK_INIT_DELAY": "soon", "KANDEV_MOCK_CANCEL": "sulk"} {
		err := run(context.Background(), config{
			in: strings.NewReader(""), out: io.Discard,
			getenv: func(key string) string {
				if key == k {
					return v
				}
				return ""
			},
		})
		if err == nil {
			t.Errorf("%s=%s: Run succeeded", k, v)
		}
	}
}

func TestSayThinkEchoPlanTool(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	sid := h.newSession()
	prompt := "Please work.\nmock: say hello world\nmock: think pondering\nmock: echo\nmock: plan write code | test it |  | ship\nmock: tool go test ./..."
	got := h.mustPrompt(sid, prompt)
	if want := "hello world\necho: " + prompt + "\n"; got != want {
		t.Errorf("messages = %q, want %q", got, want)
	}

	var thought, plan, start, end bool
	for _, n := range h.client.snapshot() {
		u := n.Update
		switch {
		case u.AgentThoughtChunk != nil:
			thought = u.AgentThoughtChunk.Content.Text.Text == "pondering"
		case u.Plan != nil:
			var entries []string
			for _, e := range u.Plan.Entries {
				if e.Priority != acp.PlanEntryPriorityMedium || e.Status != acp.PlanEntryStatusPending {
					t.Errorf("plan entry %+v", e)
				}
				entries = append(entries, e.Content)
			}
			plan = strings.Join(entries, ",") == "write code,test it,ship"
		case u.ToolCall != nil:
			tc := u.ToolCall
			start = tc.Title == "go test ./..." && tc.Kind == acp.ToolKindExecute && tc.Status == acp.ToolCallStatusInProgress
		case u.ToolCallUpdate != nil:
			end = u.ToolCallUpdate.Status != nil && *u.ToolCallUpdate.Status == acp.ToolCallStatusCompleted
		}
	}
	if !thought || !plan || !start || !end {
		t.Errorf("thought %v plan %v tool start %v tool end %v; updates %+v", thought, plan, start, end, h.client.snapshot())
	}
}

func TestAck(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	sid := h.newSession()
	if got := h.mustPrompt(sid, "[kandev:wake]\n\n  Check on the build, please.  \nmore"); got != "ack: Check on the build, please.\n" {
		t.Errorf("got %q", got)
	}
	long := strings.Repeat("é", 100)
	if got := h.mustPrompt(sid, long); got != "ack: "+strings.Repeat("é", 80)+"\n" {
		t.Errorf("long prompt: got %q", got)
	}
}

func TestUnknownDirectiveContinues(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	sid := h.newSession()
	got := h.mustPrompt(sid, "mock: dance wildly\nmock: sleep forever\nmock: on nonsense\nmock: say after")
	want := "error mock: unknown directive \"dance wildly\"\n" +
		"error mock: sleep: invalid duration \"forever\"\n" +
		"error mock: on: want \"on KIND: DIRECTIVE\", got \"nonsense\"\n" +
		"after\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestVariables(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	sid := h.newSession()
	h.mustPrompt(sid, "first")
	got := h.mustPrompt(sid, "question_id: q1\nmock: say ${question_id} ${turn} ${session_id} ${nope}\nquestion_id: q2")
	if want := "q2 2 " + string(sid) + " ${nope}\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSleep(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	sid := h.newSession()
	start := time.Now()
	if got := h.mustPrompt(sid, "mock: sleep 50ms\nmock: say awake"); got != "awake\n" {
		t.Errorf("got %q", got)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("sleep took %v", d)
	}
}

// TestCancel covers session/cancel during a sleep and during a hang: the
// turn ends promptly with "cancelled" and runs nothing more.
func TestCancel(t *testing.T) {
	for _, block := range []string{"sleep 1h", "hang"} {
		t.Run(block, func(t *testing.T) {
			leakCheck(t)
			h := newHarness(t, nil)
			sid := h.newSession()
			ch := h.promptAsync(sid, "mock: say started\nmock: "+block+"\nmock: say never")
			h.client.waitMessages(t, sid, "started\n")
			h.cancel(sid)
			r := waitResult(t, ch)
			if r.err != nil || r.resp.StopReason != acp.StopReasonCancelled {
				t.Fatalf("got %+v, %v; want cancelled", r.resp, r.err)
			}
			if strings.Contains(h.client.messages(sid), "never") {
				t.Error("directives after the cancel ran")
			}
			// The session stays usable.
			if got := h.mustPrompt(sid, "mock: say again"); got != "again\n" {
				t.Errorf("next turn: %q", got)
			}
		})
	}
}

// TestDisconnectDuringHang checks that EOF ends a hanging turn and Run.
func TestDisconnectDuringHang(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	sid := h.newSession()
	ch := h.promptAsync(sid, "mock: say started\nmock: hang")
	h.client.waitMessages(t, sid, "started\n")
	h.close()
	if r := waitResult(t, ch); r.err == nil && r.resp.StopReason != acp.StopReasonCancelled {
		t.Errorf("got %+v", r.resp)
	}
}

func TestFail(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	sid := h.newSession()
	_, err := h.prompt(sid, "mock: say before\nmock: fail the model is on fire\nmock: say after")
	var re *acp.RequestError
	if !errors.As(err, &re) || re.Message != "the model is on fire" {
		t.Fatalf("err = %v, want a JSON-RPC error with the fail text", err)
	}
	if got := h.client.messages(sid); got != "before\n" {
		t.Errorf("messages = %q", got)
	}
}

func TestCrash(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	sid := h.newSession()
	ch := h.promptAsync(sid, "mock: say before\nmock: crash\nmock: say after")
	select {
	case code := <-h.exits:
		if code != 3 {
			t.Errorf("exit code %d, want 3", code)
		}
	case <-time.After(waitTimeout):
		t.Fatal("crash did not call exit")
	}
	h.close()
	if r := waitResult(t, ch); r.err == nil {
		t.Errorf("prompt answered after crash: %+v", r.resp)
	}
	if !strings.Contains(h.wire.String(), "before") || strings.Contains(h.wire.String(), "after") {
		t.Errorf("wire after crash:\n%s", h.wire.String())
	}
}

func TestGarbage(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	sid := h.newSession()
	if got := h.mustPrompt(sid, "mock: garbage\nmock: say still here"); got != "still here\n" {
		t.Errorf("got %q", got)
	}
	if !strings.Contains(h.wire.String(), "\nthis is not json\n") {
		t.Errorf("garbage line missing from the wire:\n%s", h.wire.String())
	}
}

func TestStderr(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	sid := h.newSession()
	h.mustPrompt(sid, "v: 7\nmock: stderr diagnostic ${v}")
	if !strings.Contains(h.errOut.String(), "diagnostic 7\n") {
		t.Errorf("stderr = %q", h.errOut.String())
	}
	if strings.Contains(h.wire.String(), "diagnostic") {
		t.Error("stderr text leaked onto the ACP stream")
	}
}

func TestPermission(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	sid := h.newSession()
	answers := []acp.RequestPermissionResponse{
		selectOption("allow"),
		selectOption("reject"),
		{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}},
	}
	h.client.answer = func(acp.RequestPermissionRequest) acp.RequestPermissionResponse {
		a := answers[0]
		answers = answers[1:]
		return a
	}
	got := h.mustPrompt(sid, "mock: permission rm -rf build\nmock: permission push\nmock: permission deploy")
	if want := "permission: allow\npermission: reject\npermission: cancelled\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	h.client.mu.Lock()
	reqs := h.client.permissions
	h.client.mu.Unlock()
	if len(reqs) != 3 {
		t.Fatalf("%d permission requests", len(reqs))
	}
	r := reqs[0]
	if r.SessionId != sid || r.ToolCall.Title == nil || *r.ToolCall.Title != "rm -rf build" || r.ToolCall.ToolCallId == "" {
		t.Errorf("request %+v", r)
	}
	if len(r.Options) != 3 || r.Options[0].OptionId != "allow" || r.Options[0].Kind != acp.PermissionOptionKindAllowOnce ||
		r.Options[1].OptionId != "allow-always" || r.Options[1].Kind != acp.PermissionOptionKindAllowAlways ||
		r.Options[2].OptionId != "reject" || r.Options[2].Kind != acp.PermissionOptionKindRejectOnce {
		t.Errorf("options %+v", r.Options)
	}
	if reqs[0].ToolCall.ToolCallId == reqs[1].ToolCall.ToolCallId {
		t.Error("tool call ids repeat")
	}
}

func TestReactions(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	sid := h.newSession()
	// Registered in turn 1, which carries the tag itself: must not fire yet.
	got := h.mustPrompt(sid, "[kandev:question]\nmock: on question: say answering ${question_id} for ${child_task_id}\nmock: on any: mock: think saw turn ${turn}")
	if got != "" {
		t.Errorf("turn 1 said %q", got)
	}
	got = h.mustPrompt(sid, "[kandev:question]\nYour child asks something.\nquestion_id: q42\nchild_task_id: abc123")
	if got != "answering q42 for abc123\n" {
		t.Errorf("turn 2 said %q", got)
	}
	// Only "any" fires here, so there is no ack either.
	if got := h.mustPrompt(sid, "[kandev:answer]\nthanks"); got != "" {
		t.Errorf("turn 3 said %q", got)
	}
	var thoughts []string
	for _, n := range h.client.snapshot() {
		if n.Update.AgentThoughtChunk != nil {
			thoughts = append(thoughts, n.Update.AgentThoughtChunk.Content.Text.Text)
		}
	}
	if strings.Join(thoughts, "|") != "saw turn 2|saw turn 3" {
		t.Errorf("thoughts %q", thoughts)
	}
}

// TestHistoryAcrossProcesses resumes a session in a second agent and loads
// it in a third, all sharing one state dir, as kandev does after a restart.
func TestHistoryAcrossProcesses(t *testing.T) {
	leakCheck(t)
	dir := t.TempDir()

	h1 := newHarness(t, map[string]string{"KANDEV_MOCK_STATE_DIR": dir})
	sid := h1.newSession()
	h1.mustPrompt(sid, "[kandev:message]\nfirst prompt\nmock: say one")
	h1.mustPrompt(sid, "second prompt\nmock: on question: say reacted ${question_id}")
	h1.close()

	h2 := newHarness(t, map[string]string{"KANDEV_MOCK_STATE_DIR": dir})
	h2.initialize()
	if _, err := h2.conn.ResumeSession(h2.ctx(), acp.ResumeSessionRequest{SessionId: sid, Cwd: t.TempDir(), McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("session/resume: %v", err)
	}
	got := h2.mustPrompt(sid, "mock: history")
	if want := "history: session " + string(sid) + " turn 3; earlier: first prompt; second prompt\n"; got != want {
		t.Errorf("history = %q, want %q", got, want)
	}
	if got := h2.mustPrompt(sid, "[kandev:question]\nquestion_id: q9"); got != "reacted q9\n" {
		t.Errorf("persisted reaction: %q", got)
	}
	if _, err := h2.conn.ResumeSession(h2.ctx(), acp.ResumeSessionRequest{SessionId: "mock-nope", Cwd: t.TempDir()}); err == nil {
		t.Error("resume of an unknown session succeeded")
	}
	if _, err := h2.conn.ResumeSession(h2.ctx(), acp.ResumeSessionRequest{SessionId: "../escape", Cwd: t.TempDir()}); err == nil {
		t.Error("resume of a path-like session id succeeded")
	}
	if _, err := h2.conn.LoadSession(h2.ctx(), acp.LoadSessionRequest{SessionId: sid, Cwd: t.TempDir(), McpServers: []acp.McpServer{}}); err == nil {
		t.Error("session/load succeeded though only resume is advertised")
	}
	h2.close()

	h3 := newHarness(t, map[string]string{"KANDEV_MOCK_STATE_DIR": dir, "KANDEV_MOCK_RESUME": "load"})
	h3.initialize()
	if _, err := h3.conn.LoadSession(h3.ctx(), acp.LoadSessionRequest{SessionId: sid, Cwd: t.TempDir(), McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	got = h3.mustPrompt(sid, "mock: history")
	if want := "history: session " + string(sid) + " turn 5; earlier: first prompt; second prompt; mock: history; question_id: q9\n"; got != want {
		t.Errorf("history = %q, want %q", got, want)
	}
	if _, err := h3.conn.LoadSession(h3.ctx(), acp.LoadSessionRequest{SessionId: "mock-nope", Cwd: t.TempDir(), McpServers: []acp.McpServer{}}); err == nil {
		t.Error("load of an unknown session succeeded")
	}
}

func TestPromptUnknownSession(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	h.initialize()
	if _, err := h.prompt("mock-nope", "hi"); err == nil {
		t.Error("prompt to an unknown session succeeded")
	}
}

func TestInitDelay(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, map[string]string{"KANDEV_MOCK_INIT_DELAY": "150ms"})
	start := time.Now()
	h.initialize()
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("initialize answered after %v", d)
	}

	// A client that gives up during the delay must not have to wait for it.
	h2 := newHarness(t, map[string]string{"KANDEV_MOCK_INIT_DELAY": "1h"})
	go func() {
		_, _ = h2.conn.Initialize(context.Background(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber})
	}()
	time.Sleep(20 * time.Millisecond)
	start = time.Now()
	h2.close()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Run took %v to return", d)
	}
}

func TestRunReturnsOnEOF(t *testing.T) {
	leakCheck(t)
	err := run(context.Background(), config{in: strings.NewReader(""), out: io.Discard, getenv: func(string) string { return "" }})
	if err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

func TestRunStopsWhenContextEnds(t *testing.T) {
	leakCheck(t)
	in, w := io.Pipe()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, in, io.Discard, io.Discard, func(string) string { return "" }) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v, want context.Canceled", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return when ctx ended")
	}
}

// TestRunStopsDuringSlowInitialize ends ctx while initialize is delayed, on
// an input Run cannot close: Run must still return promptly.
func TestRunStopsDuringSlowInitialize(t *testing.T) {
	leakCheck(t)
	pr, pw := io.Pipe()
	in := struct{ io.Reader }{pr} // hides Close
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	getenv := func(k string) string {
		if k == "KANDEV_MOCK_INIT_DELAY" {
			return "1h"
		}
		return ""
	}
	go func() {
		done <- run(ctx, config{in: in, out: io.Discard, getenv: getenv})
	}()
	if _, err := io.WriteString(pw, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Run waited for the init delay")
	}
	_ = pw.Close() // lets the SDK's reader go
}

// TestConditional runs a directive only when a prompt variable matches.
func TestConditional(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	sid := h.newSession()
	h.mustPrompt(sid, "mock: on wake: if open_subtasks=0: say all done after ${finished_task_id}")
	if got := h.mustPrompt(sid, "[kandev:wake]\nfinished_task_id: a1\nopen_subtasks: 1"); got != "" {
		t.Errorf("with a subtask open it said %q", got)
	}
	if got := h.mustPrompt(sid, "[kandev:wake]\nfinished_task_id: b2\nopen_subtasks: 0"); got != "all done after b2\n" {
		t.Errorf("with none open it said %q", got)
	}
	if got := h.mustPrompt(sid, "mock: if broken"); !strings.Contains(got, "error mock: if") {
		t.Errorf("malformed if said %q", got)
	}
}
