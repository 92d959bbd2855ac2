package daemon_test

import (
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// cutByStop starts a task whose turn says one, sleeps and says two, and
// stops the daemon with `kandev daemon stop` after one, mid-turn. It
// returns the task as it was before the stop.
func cutByStop(t *testing.T, d *daemontest.Daemon) core.Task {
	t.Helper()
	task := create(t, d, api.CreateTaskInput{Title: "cut", Start: true,
		Prompt: "mock: say one\nmock: sleep 3s\nmock: say two"})
	waitSaid(t, d, task.ID, "one")
	task = get(t, d, task.ID)
	if r := d.Run("daemon", "stop"); r.Code != 0 {
		t.Fatalf("daemon stop: exit %d %q", r.Code, r.Stderr)
	}
	<-d.Exited()
	return task
}

// stopBackground stops the daemon a client started in the background.
func stopBackground(t *testing.T, d *daemontest.Daemon) {
	t.Cleanup(func() {
		if r := d.Run("daemon", "stop"); r.Code != 0 {
			t.Errorf("daemon stop: exit %d %q", r.Code, r.Stderr)
		}
	})
}

// A run cut by `kandev daemon stop` resumes by itself once a command
// starts the daemon again (a read starts none), which names the run: the
// agent's session is resumed, the cut prompt is delivered a second time,
// and only then, and the turn completes.
func TestInterruptedRunResumesOnStart(t *testing.T) {
	d := daemontest.Start(t)
	before := cutByStop(t, d)
	task := before
	if r := d.Run("task", "list"); r.Code != 1 || !strings.Contains(r.Stderr, "no kandev daemon is running") {
		t.Fatalf("task list with the daemon stopped: exit %d %q", r.Code, r.Stderr)
	}
	r := d.Run("daemon", "start")
	stopBackground(t, d)
	if want := "it resumed 1 interrupted run: " + task.ID + ` "cut"`; r.Code != 0 || !strings.Contains(r.Stderr, want) {
		t.Fatalf("daemon start: exit %d %q, want %q", r.Code, r.Stderr, want)
	}
	waitSaid(t, d, task.ID, "two")
	final := waitSettled(t, d, task.ID)
	if final.Interrupted {
		t.Fatal("a resumed task is still marked interrupted")
	}
	ps := prompts(conversation(t, d, task.ID))
	if len(ps) != 2 || !strings.Contains(ps[0], "mock: say two") || !strings.Contains(ps[1], "mock: say two") {
		t.Fatalf("prompts %q, want the cut one and its one redelivery", ps)
	}
	if n := strings.Count(strings.Join(said(t, d, task.ID), "\n"), "two"); n != 1 {
		t.Fatalf("the agent said two %d times, want once", n)
	}
	if final.Session.AgentSessionID != before.Session.AgentSessionID {
		t.Fatalf("agent session %s, want %s resumed", final.Session.AgentSessionID, before.Session.AgentSessionID)
	}
}

// With KANDEV_NO_RESUME the daemon leaves the cut run alone: the task is
// marked interrupted (task list, task show, kandev status) until an
// explicit start, which delivers the cut prompt once more.
func TestNoResumeMarksInterrupted(t *testing.T) {
	d := daemontest.Start(t)
	task := cutByStop(t, d)
	d.SetEnv("KANDEV_NO_RESUME", "1")
	if r := d.Run("daemon", "start"); r.Code != 0 || strings.Contains(r.Stderr, "resumed") {
		t.Fatalf("daemon start: exit %d %q, want no run resumed", r.Code, r.Stderr)
	}
	stopBackground(t, d)
	r := d.Run("task", "list")
	if r.Code != 0 || !strings.Contains(r.Stdout, "interrupted") {
		t.Fatalf("task list: exit %d %q", r.Code, r.Stdout)
	}
	got := get(t, d, task.ID)
	if !got.Interrupted || got.Queued != 1 || got.Session.State.Live() {
		t.Fatalf("task %+v session %+v, want interrupted with its cut prompt queued and nothing running", got, got.Session)
	}
	if r := d.Run("task", "show", task.ID); !strings.Contains(r.Stdout, "interrupted:") {
		t.Fatalf("task show: %q", r.Stdout)
	}
	if r := d.Run("status"); !strings.Contains(r.Stdout, "interrupted") {
		t.Fatalf("status: %q", r.Stdout)
	}
	if r := d.Run("task", "start", task.ID); r.Code != 0 {
		t.Fatalf("task start: exit %d %q", r.Code, r.Stderr)
	}
	waitSaid(t, d, task.ID, "two")
	final := waitSettled(t, d, task.ID)
	if final.Interrupted {
		t.Fatal("a started task is still marked interrupted")
	}
	if ps := prompts(conversation(t, d, task.ID)); len(ps) != 2 {
		t.Fatalf("prompts %q, want the cut one and its one redelivery", ps)
	}
}
