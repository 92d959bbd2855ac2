package daemon_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
	"github.com/kandev/kandev/internal/sshtest"
)

// TestHostAddWakesWaiters: a --host auto run waiting for a slot starts on
// a host added meanwhile, another once a host's --max-agents is raised
// (host edit), and one waiting because there is no host at all starts
// once one is added: each woken by the change, not by a run's end or a
// poll. Nothing of a session is left on either side.
func TestHostAddWakesWaiters(t *testing.T) {
	h := sshtest.Start(t)
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_SSH_CONFIG="+h.Config))
	ctx := context.Background()
	work := t.TempDir()
	dir := h.RemoteDir + "/kandev"
	d.MustRun("host", "add", "lb", "--ssh", h.Alias, "--dir", dir, "--max-agents", "1")

	first := create(t, d, api.CreateTaskInput{Title: "first", CWD: work, Host: "auto", Start: true, Prompt: "mock: say up first\nmock: hang"})
	waitSaid(t, d, first.ID, "up first")
	second := create(t, d, api.CreateTaskInput{Title: "second", CWD: work, Host: "auto", Start: true, Prompt: "mock: say up second\nmock: hang"})
	ids := []string{first.ID, second.ID}
	t.Cleanup(func() {
		if t.Failed() {
			for _, id := range ids {
				got := get(t, d, id)
				t.Logf("%s: host %q waiting %q session %+v said %q", id, got.Host, got.Waiting, got.Session, said(t, d, id))
			}
		}
	})
	daemontest.Eventually(t, wait, "the second task waiting for a slot", func() bool {
		return strings.HasPrefix(get(t, d, second.ID).Waiting, "host slots full: lb (1/1 agents")
	})

	// A second host (the same machine, another directory): the waiting
	// run takes its slot while the first still holds lb's.
	d.MustRun("host", "add", "lb2", "--ssh", h.Alias, "--dir", dir+"2", "--max-agents", "1")
	waitSaid(t, d, second.ID, "up second")
	if got := get(t, d, second.ID); got.Host != "lb2" || got.Waiting != "" {
		t.Fatalf("the woken task: host %q waiting %q, want lb2 and none", got.Host, got.Waiting)
	}
	if got := get(t, d, first.ID); got.Session == nil || got.Session.State != core.SessionRunning {
		t.Fatalf("the first task's run: %+v", got.Session)
	}

	// Both full: a third waits, and starts when lb's bound is raised.
	raised := create(t, d, api.CreateTaskInput{Title: "raised", CWD: work, Host: "auto", Start: true, Prompt: "mock: say up raised\nmock: hang"})
	ids = append(ids, raised.ID)
	daemontest.Eventually(t, wait, "the third task waiting for a slot", func() bool {
		return strings.HasPrefix(get(t, d, raised.ID).Waiting, "host slots full: ")
	})
	if r := d.Run("host", "edit", "lb", "--max-agents", "-1"); r.Code == 0 {
		t.Fatal("host edit --max-agents -1 accepted")
	}
	if got := decodeJSON[core.Host](t, d.MustRun("host", "edit", "lb", "--max-agents", "2", "--json")); got.MaxAgents != 2 {
		t.Fatalf("host edit: %+v", got)
	}
	waitSaid(t, d, raised.ID, "up raised")
	if got := get(t, d, raised.ID); got.Host != "lb" || got.Waiting != "" {
		t.Fatalf("the task woken by the raised bound: host %q waiting %q", got.Host, got.Waiting)
	}

	// No host at all: a --host auto task (created while there were hosts)
	// waits, saying so, and starts on the next host added.
	third := create(t, d, api.CreateTaskInput{Title: "third", CWD: work, Host: "auto"})
	ids = append(ids, third.ID)
	for _, id := range []string{first.ID, second.ID, raised.ID} {
		if _, err := d.Client.StopTask(ctx, id, api.StopTaskInput{}); err != nil {
			t.Fatal(err)
		}
		d.MustRun("task", "archive", id)
	}
	d.MustRun("host", "remove", "lb")
	d.MustRun("host", "remove", "lb2")
	message(t, d, third.ID, "mock: say up third")
	daemontest.Eventually(t, wait, "the third task waiting for a host", func() bool {
		return get(t, d, third.ID).Waiting == "--host auto: no hosts (kandev host add)"
	})
	d.MustRun("host", "add", "lb3", "--ssh", h.Alias, "--dir", dir)
	waitSaid(t, d, third.ID, "up third")
	if got := waitSettled(t, d, third.ID); got.Host != "lb3" || got.Waiting != "" {
		t.Fatalf("the task woken by the host's addition: host %q waiting %q", got.Host, got.Waiting)
	}

	d.Stop()
	homeGone(t, d, "after the daemon stopped")
	mastersGone(t, d.Home.Dir, "after the daemon stopped")
}
