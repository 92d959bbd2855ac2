package daemon_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// Every process of a session carries KANDEV_SESSION_ID in its environment,
// whether it stayed in the agent's process group or not. None may outlive
// the task's run: not a helper in the group, not a setsid grandchild, not
// an agent that ignores SIGINT and SIGTERM.

// procDeadline is the bound issue 10 sets: nothing of the session is
// alive this long after a stop or a shutdown.
const procDeadline = 10 * time.Second

// withHelpers starts a task whose agent spawns a helper in its group and a
// setsid grandchild, then runs script; it returns the task once both
// helpers are up.
func withHelpers(t *testing.T, d *daemontest.Daemon, script string) (core.Task, string) {
	t.Helper()
	task := create(t, d, api.CreateTaskInput{Title: "helpers",
		Prompt: "mock: spawn-child\nmock: spawn-setsid\nmock: say helpers up\n" + script, Start: true})
	waitSaid(t, d, task.ID, "helpers up")
	sid := get(t, d, task.ID).Session.ID
	t.Cleanup(func() {
		for _, pid := range agent.SessionProcs(sid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	// The agent, the two helpers (and the MCP bridge once it is used).
	if n := len(agent.SessionProcs(sid)); n < 3 {
		t.Fatalf("%d processes carry the session id, want the agent and its 2 helpers", n)
	}
	return task, sid
}

// sessionGone waits, at most procDeadline, until no process carries the
// session's id.
func sessionGone(t *testing.T, sid, after string) {
	t.Helper()
	deadline := time.Now().Add(procDeadline)
	for {
		left := agent.SessionProcs(sid)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: processes %v of session %s still alive after %s", after, left, sid, procDeadline)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNoProcessOutlivesItsTask(t *testing.T) {
	for _, stubborn := range []bool{false, true} {
		env := []string{}
		name := "polite"
		if stubborn {
			// The agent and its helpers ignore SIGINT and SIGTERM.
			env, name = []string{"KANDEV_MOCK_STUBBORN=1"}, "stubborn"
		}
		t.Run(name+"/stop", func(t *testing.T) {
			d := daemontest.Start(t, daemontest.WithEnv(env...))
			task, sid := withHelpers(t, d, "mock: hang")
			res, err := d.Client.StopTask(context.Background(), task.ID, api.StopTaskInput{})
			if err != nil || res.Result != "stopped" {
				t.Fatalf("stop: %+v %v", res, err)
			}
			sessionGone(t, sid, "task stop")
		})
		t.Run(name+"/shutdown", func(t *testing.T) {
			d := daemontest.Start(t, daemontest.WithEnv(env...))
			_, sid := withHelpers(t, d, "mock: hang")
			d.Stop()
			sessionGone(t, sid, "daemon shutdown")
		})
	}
	// The agent dies first: what it started must not stay behind.
	t.Run("leader-exited", func(t *testing.T) {
		d := daemontest.Start(t)
		task, sid := withHelpers(t, d, "mock: sleep 200ms\nmock: crash")
		waitState(t, d, task.ID, core.SessionFailed)
		sessionGone(t, sid, "the agent's crash")
	})
	// A run that ends (the task handed on, idle, failed) takes its helpers.
	t.Run("idle-end", func(t *testing.T) {
		d := daemontest.Start(t, daemontest.WithEnv("KANDEV_IDLE_TIMEOUT=300ms"))
		p := create(t, d, api.CreateTaskInput{Title: "parent"})
		create(t, d, api.CreateTaskInput{Title: "open subtask", ParentID: p.ID})
		if _, err := d.Client.StartTask(context.Background(), p.ID, api.StartTaskInput{Prompt: "mock: spawn-setsid\nmock: say helpers up"}); err != nil {
			t.Fatal(err)
		}
		waitSaid(t, d, p.ID, "helpers up")
		sid := get(t, d, p.ID).Session.ID
		waitState(t, d, p.ID, core.SessionCompleted)
		sessionGone(t, sid, "the idle run's end")
	})
	// kill -9 of the daemon leaves everything behind; the next daemon ends
	// it all at startup.
	t.Run("restart", func(t *testing.T) {
		d := daemontest.Start(t)
		_, sid := withHelpers(t, d, "mock: hang")
		d.Kill9()
		// The agent exits as its input closes; its two helpers stay.
		if n := len(agent.SessionProcs(sid)); n < 2 {
			t.Fatalf("after kill -9, %d processes of the session are left; the test needs the orphaned helpers", n)
		}
		d.Restart()
		sessionGone(t, sid, "restart recovery")
	})
}
