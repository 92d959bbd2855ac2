package daemon_test

import (
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// kill -9 of the daemon mid-turn: the next daemon (started with
// --no-resume, so the state between can be seen) marks the session
// interrupted, keeps every queued and recorded message, and the next
// message resumes the agent with the cut-short prompt first.
func TestRestartRecoveryAfterKill9(t *testing.T) {
	d := daemontest.Start(t)
	task := create(t, d, api.CreateTaskInput{Title: "survivor",
		Prompt: "mock: say working\nmock: sleep 2s\nmock: say first done", Start: true})
	waitSaid(t, d, task.ID, "working")
	message(t, d, task.ID, "mock: say queued before the crash")
	before := get(t, d, task.ID)
	if before.Session.State != core.SessionRunning || before.Queued != 1 {
		t.Fatalf("before crash: session %s queued %d", before.Session.State, before.Queued)
	}
	recorded := len(conversation(t, d, task.ID))

	d.Kill9()
	d.SetEnv("KANDEV_NO_RESUME", "1")
	d.Restart()

	after := get(t, d, task.ID)
	if after.Session.State != core.SessionCancelled || !strings.Contains(after.Session.EndReason, "interrupted") {
		t.Fatalf("after restart: session %s %q, want cancelled as interrupted", after.Session.State, after.Session.EndReason)
	}
	if after.Queued != 2 {
		t.Fatalf("after restart: queued %d, want the cut-short prompt back plus the queued one", after.Queued)
	}
	// An interrupted run is no status transition: the task is still being
	// worked (its cut prompt is queued again), as it was before the crash.
	if after.Status != before.Status {
		t.Fatalf("after restart: status %s, want %s unchanged", after.Status, before.Status)
	}
	if n := len(conversation(t, d, task.ID)); n < recorded {
		t.Fatalf("conversation shrank from %d to %d entries", recorded, n)
	}
	// With --no-resume nothing runs by itself; the next message resumes.
	if after.Session.State.Live() || !after.Interrupted {
		t.Fatalf("session %s, interrupted %v: want it left interrupted", after.Session.State, after.Interrupted)
	}
	message(t, d, task.ID, "mock: history")
	waitSaid(t, d, task.ID, "history:")
	final := waitSettled(t, d, task.ID)
	if final.Session.AgentSessionID != before.Session.AgentSessionID {
		t.Fatalf("agent session %s, want %s resumed", final.Session.AgentSessionID, before.Session.AgentSessionID)
	}
	text := strings.Join(said(t, d, task.ID), "\n")
	for _, want := range []string{"working", "first done", "queued before the crash", "history:"} {
		if !strings.Contains(text, want) {
			t.Fatalf("agent output lacks %q:\n%s", want, text)
		}
	}
	// Order: the redelivered prompt, then the queued one, then the new one.
	ps := prompts(conversation(t, d, task.ID))
	if len(ps) != 4 || !strings.Contains(ps[1], "first done") || !strings.Contains(ps[2], "queued before") || ps[3] != "mock: history" {
		t.Fatalf("prompts in order: %q", ps)
	}
}

// SIGTERM: the daemon stops its agents, marks sessions interrupted and
// exits cleanly; a restart (with --no-resume, to look) finds everything.
func TestGracefulShutdown(t *testing.T) {
	d := daemontest.Start(t)
	task := create(t, d, api.CreateTaskInput{Title: "graceful", Prompt: "mock: say up\nmock: hang", Start: true})
	waitSaid(t, d, task.ID, "up")
	pid := get(t, d, task.ID).Session.PID
	d.Stop()
	if processAlive(-pid) {
		t.Fatalf("agent group %d outlived the daemon", pid)
	}
	if !strings.Contains(d.Log(), "kandev daemon stopped") {
		t.Fatalf("daemon log:\n%s", d.Log())
	}
	d.SetEnv("KANDEV_NO_RESUME", "1")
	d.Restart()
	got := get(t, d, task.ID)
	if got.Session.State != core.SessionCancelled || !strings.Contains(got.Session.EndReason, "shut down") {
		t.Fatalf("after shutdown: %s %q", got.Session.State, got.Session.EndReason)
	}
	if got.Queued != 1 {
		t.Fatalf("the hung prompt should be queued again, queued=%d", got.Queued)
	}
}
