package daemon_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
	"github.com/kandev/kandev/internal/sshtest"
	"github.com/kandev/kandev/store"
)

// onHost counts the session's live processes running as the host's
// account (on the loopback host both sides are this machine's).
func onHost(t *testing.T, h *sshtest.Host, sid string) int {
	n := 0
	for _, uid := range procUIDs(t, sid) {
		if uid == h.RemoteUID {
			n++
		}
	}
	return n
}

// cutOnHost sends the task a prompt that leaves a helper detached from
// the agent (setsid: its input's end does not end it) and waits on a
// gate, cuts the host's network mid-turn (the sshd and its connections
// end, what they started on the host runs on), and waits for the task to show
// the host unreachable. It returns the cut session, the gate and the
// waiting reason.
func cutOnHost(t *testing.T, d *daemontest.Daemon, h *sshtest.Host, id, name string, first bool) (core.SessionInfo, string, string) {
	t.Helper()
	g := gate(t, h, "gate-"+name)
	spawned := countIn(t, d, id, "spawned: pid")
	prompt := strings.Join([]string{"mock: say up " + name, "mock: spawn-setsid", "mock: waitfile " + g, "mock: say done " + name}, "\n")
	if !first {
		message(t, d, id, prompt)
	}
	daemontest.Eventually(t, wait, "the helper of turn "+name+" spawned", func() bool { return countIn(t, d, id, "spawned: pid") > spawned })
	s := *get(t, d, id).Session
	daemontest.Eventually(t, wait, "the helper on the host", func() bool { return onHost(t, h, s.ID) > 0 })
	h.Cut()
	var reason string
	daemontest.Eventually(t, wait, "the task to show the host unreachable", func() bool {
		reason = get(t, d, id).Waiting
		return strings.HasPrefix(reason, "host lb unreachable since ")
	})
	return s, g, reason
}

// countIn counts the occurrences of sub in what the task's agent said (a
// reply may join the lines of several directives).
func countIn(t *testing.T, d *daemontest.Daemon, id, sub string) int {
	n := 0
	for _, m := range said(t, d, id) {
		n += strings.Count(m, sub)
	}
	return n
}

// resumedAndDone waits for the cut prompt's second delivery, opens its
// gate and waits for the turn to complete and the task to settle, not
// failed and waiting for nothing.
func resumedAndDone(t *testing.T, d *daemontest.Daemon, id, name, g string) {
	t.Helper()
	daemontest.Eventually(t, wait, "the cut prompt "+name+" delivered again", func() bool { return countIn(t, d, id, "up "+name+"\n") == 2 })
	open(t, g)
	waitSaid(t, d, id, "done "+name)
	got := waitSettled(t, d, id)
	if got.Waiting != "" || (got.Stalled != nil && got.Stalled.Failed) {
		t.Fatalf("after turn %s: waiting %q stalled %+v", name, got.Waiting, got.Stalled)
	}
}

// hostOutageRig starts the loopback host and a daemon with host lb, and
// creates a task there whose first turn cutOnHost then cuts (turn "a").
func hostOutageRig(t *testing.T) (*sshtest.Host, *daemontest.Daemon, core.Task, string) {
	h := sshtest.Start(t)
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_SSH_CONFIG="+h.Config))
	d.MustRun("host", "add", "lb", "--ssh", h.Alias, "--dir", h.RemoteDir+"/kandev")
	ga := gate(t, h, "gate-a")
	task := create(t, d, api.CreateTaskInput{Title: "remote", CWD: gitRepo(t), Host: "lb", Start: true,
		Prompt: strings.Join([]string{"mock: say up a", "mock: spawn-setsid", "mock: waitfile " + ga, "mock: say done a"}, "\n")})
	t.Cleanup(func() {
		if t.Failed() {
			got := get(t, d, task.ID)
			t.Logf("task: waiting %q interrupted %v session %+v stalled %+v", got.Waiting, got.Interrupted, got.Session, got.Stalled)
			for _, m := range conversation(t, d, task.ID) {
				t.Logf("%s: %s", m.Kind, m.Text)
			}
			t.Logf("daemon log:\n%s", d.Log())
		}
	})
	return h, d, task, ga
}

// TestHostOutageOutlivesRestart: a host's outage outlives the daemon.
// (a) Restarted while the host is down, the daemon keeps waiting for it,
// showing the outage's first time, and once it is back ends there by
// marker the helper the cut session left and resumes the turn. (c) The
// give-up is measured from the outage's start, across restarts: an outage
// recorded as older than 15 minutes fails the run (and climbs) at the
// first failed try, and the next run that reaches the host ends what the
// cut session left there. No process of the daemon's home is left on
// either side at the end.
func TestHostOutageOutlivesRestart(t *testing.T) {
	h, d, task, ga := hostOutageRig(t)

	// (a) A restart while the host is down.
	sa, _, reason := cutOnHost(t, d, h, task.ID, "a", true)
	d.Restart()
	daemontest.Eventually(t, wait, "the restarted daemon to go on trying the host", func() bool {
		return strings.Contains(d.Log(), "host unreachable; trying again")
	})
	got := get(t, d, task.ID)
	if got.Waiting != reason || (got.Session != nil && got.Session.ID != sa.ID) || (got.Stalled != nil && got.Stalled.Failed) {
		t.Fatalf("after the restart while the host is down: waiting %q (want %q) session %+v stalled %+v", got.Waiting, reason, got.Session, got.Stalled)
	}
	if onHost(t, h, sa.ID) == 0 {
		t.Fatal("the cut session's helper is gone before the host is back")
	}
	h.Start()
	daemontest.Eventually(t, wait, "the cut session's leftovers ended on the host", func() bool {
		return strings.Contains(d.Log(), "killed processes a lost connection left on a host")
	})
	sessionGone(t, sa.ID, "the host's reconnection after a restart")
	resumedAndDone(t, d, task.ID, "a", ga)

	// (c) An outage older than the give-up, across a restart.
	sc, gc, _ := cutOnHost(t, d, h, task.ID, "c", false)
	d.Stop()
	db, err := store.Open(context.Background(), d.Home.DB())
	if err != nil {
		t.Fatal(err)
	}
	err = db.SetHostUnreachable(context.Background(), "lb", time.Now().Add(-16*time.Minute))
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	d.Restart()
	failed := waitState(t, d, task.ID, core.SessionFailed)
	if !strings.Contains(failed.Session.Error, "host lb unreachable") || failed.Stalled == nil || !strings.Contains(d.Log(), "giving up the reconnection") {
		t.Fatalf("an outage past the give-up: session %+v stalled %+v", failed.Session, failed.Stalled)
	}
	if onHost(t, h, sc.ID) == 0 {
		t.Fatal("the cut session's helper is gone while the host is down")
	}
	h.Start()
	open(t, gc) // (were the cut prompt delivered again)
	message(t, d, task.ID, "mock: say again")
	waitSaid(t, d, task.ID, "again")
	if !strings.Contains(d.Log(), "killed processes a lost connection left on a host") {
		t.Fatalf("the run that reached the host did not sweep the cut session there:\n%s", d.Log())
	}
	sessionGone(t, sc.ID, "the next run on the host")
	waitSettled(t, d, task.ID)

	d.Stop()
	homeGone(t, d, "after the daemon stopped")
	mastersGone(t, d.Home.Dir, "after the daemon stopped")
}

// TestHostKill9DuringOutage: a session a lost connection cut is torn down
// here, but what it left on the host is recorded, so a daemon killed with
// -9 during the outage does not forget it. (b) The host back before the
// next start: that start's sweep ends the helper there. (b2) The host
// still down at the next start: the daemon waits for it, and ends the
// helper once it is back. Each time the cut turn then resumes on the
// host, and at the end no process of the home is left on either side.
func TestHostKill9DuringOutage(t *testing.T) {
	h, d, task, ga := hostOutageRig(t)

	// (b) The host back before the next start.
	sa, _, _ := cutOnHost(t, d, h, task.ID, "a", true)
	d.Kill9()
	if onHost(t, h, sa.ID) == 0 {
		t.Fatal("the cut session's helper is gone before the next start")
	}
	h.Start()
	d.Restart()
	sessionGone(t, sa.ID, "the next start after kill -9 during an outage")
	if l := d.Log(); !strings.Contains(l, "killed processes an earlier daemon left on a host") {
		t.Fatalf("no sweep on the host in the daemon's log:\n%s", l)
	}
	resumedAndDone(t, d, task.ID, "a", ga)

	// (b2) The host still down at the next start.
	sb, gb, _ := cutOnHost(t, d, h, task.ID, "b", false)
	d.Kill9()
	d.Restart()
	daemontest.Eventually(t, wait, "the restarted daemon to go on trying the host", func() bool {
		return strings.Contains(d.Log(), "host unreachable; trying again")
	})
	if onHost(t, h, sb.ID) == 0 {
		t.Fatal("the cut session's helper is gone before the host is back")
	}
	h.Start()
	daemontest.Eventually(t, wait, "the cut session's leftovers ended on the host", func() bool {
		return strings.Contains(d.Log(), "killed processes a lost connection left on a host")
	})
	sessionGone(t, sb.ID, "the host's reconnection after kill -9")
	resumedAndDone(t, d, task.ID, "b", gb)

	d.Stop()
	homeGone(t, d, "after the daemon stopped")
	mastersGone(t, d.Home.Dir, "after the daemon stopped")
}
