package daemon_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/daemon/daemontest"
	"github.com/kandev/kandev/internal/sshtest"
)

// TestHostPlacementAuto: on a host with --max-agents 1, tasks created
// with --host auto take its one slot in turn. The second and third wait,
// shown in waiting ("host slots full: …"), and start in creation order as
// each run before them ends; the slot also bounds a task given the host
// by name, a subtask of a placed task inherits its host, and the
// configuration's host is the default of a top-level task. Nothing of a
// session is left on either side.
func TestHostPlacementAuto(t *testing.T) {
	h := sshtest.Start(t)
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_SSH_CONFIG="+h.Config))
	ctx := context.Background()
	work := t.TempDir()

	if r := d.Run("task", "create", "no hosts", "--cwd", work, "--host", "auto"); r.Code == 0 || !strings.Contains(r.Stderr, "no hosts") {
		t.Fatalf("--host auto without hosts: exit %d, %s", r.Code, r.Stderr)
	}
	d.MustRun("host", "add", "lb", "--ssh", h.Alias, "--dir", h.RemoteDir+"/kandev", "--max-agents", "1")

	var ids []string
	for _, name := range []string{"first", "second", "third"} {
		task := create(t, d, core.CreateTaskInput{Title: name, CWD: work, Host: "auto", Start: true,
			Prompt: "mock: say up " + name + "\nmock: hang"})
		if task.Host != "auto" {
			t.Fatalf("task created with --host auto: host %q before its first run", task.Host)
		}
		ids = append(ids, task.ID)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, id := range ids {
				got := get(t, d, id)
				t.Logf("%s: host %q waiting %q session %+v said %q", id, got.Host, got.Waiting, got.Session, said(t, d, id))
			}
			if b, err := os.ReadFile(d.Home.Dir + "/daemon.log"); err == nil {
				t.Logf("daemon log:\n%s", b)
			}
		}
	})
	waitSlotFull := func(id string) {
		t.Helper()
		daemontest.Eventually(t, wait, "task "+id+" waiting for a slot", func() bool {
			return strings.HasPrefix(get(t, d, id).Waiting, "host slots full: lb (1/1 agents")
		})
	}
	// Whoever ran first, the one slot is taken by one task at a time, in
	// creation order: the first, then the second, then the third.
	for i, id := range ids {
		waitSaid(t, d, id, "up ")
		got := get(t, d, id)
		if got.Host != "lb" || got.Waiting != "" {
			t.Fatalf("task %d running: host %q waiting %q", i, got.Host, got.Waiting)
		}
		for _, later := range ids[i+1:] {
			waitSlotFull(later)
			if s := get(t, d, later).Session; s != nil {
				t.Fatalf("task %s started while the slot was taken: %+v", later, s)
			}
		}
		if i == 0 {
			// Shown in the list and by show, like an unserved run.
			if out := d.MustRun("task", "show", ids[1]); !strings.Contains(out, "host slots full") || !strings.Contains(out, "auto (placed") {
				t.Fatalf("task show of a waiting task:\n%s", out)
			}
			// A task given the host by name waits for the slot too.
			named := create(t, d, core.CreateTaskInput{Title: "named", CWD: work, Host: "lb", Start: true, Prompt: "mock: say named"})
			waitSlotFull(named.ID)
			if _, err := d.Client.StopTask(ctx, named.ID); err != nil {
				t.Fatal(err)
			}
			// A subtask of a placed task inherits its host.
			if kid := create(t, d, core.CreateTaskInput{Title: "kid", ParentID: id}); kid.Host != "lb" {
				t.Fatalf("child of a task placed on lb: host %q", kid.Host)
			}
		}
		sid := got.Session.ID
		if res, err := d.Client.StopTask(ctx, id); err != nil || res.Result != "stopped" {
			t.Fatalf("stop %s: %+v %v", id, res, err)
		}
		sessionGone(t, sid, "stop")
	}

	// A sandbox is refused on a host, saying why: kandev cannot confine
	// an agent there, and never runs one less confined than asked.
	for _, mode := range []string{"bwrap"} {
		r := d.Run("task", "create", "boxed", "--cwd", work, "--host", "lb", "--sandbox", mode)
		if r.Code == 0 || !strings.Contains(r.Stderr, "sandbox "+mode+" on host lb: kandev cannot confine an agent on a host") {
			t.Fatalf("--sandbox %s on a host: exit %d, %s", mode, r.Code, r.Stderr)
		}
	}

	// The configuration's host is a top-level task's default.
	d.MustRun("config", "set", "host", "lb")
	if got := create(t, d, core.CreateTaskInput{Title: "default", CWD: work}); got.Host != "lb" {
		t.Fatalf("task created with config host lb: host %q", got.Host)
	}
	d.Stop()
	mastersGone(t, d.Home.Dir, "after the daemon stopped")
}
