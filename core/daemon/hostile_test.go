package daemon_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// The bad-agent suite: an agent kandev does not control must not take the
// daemon, or any other task, down with it.

// rssLimit is the memory bound the daemon must stay under while one agent
// floods it (issue 10).
const rssLimit = 200 << 20

// daemonPeak is the daemon's peak resident set (VmHWM) in bytes.
func daemonPeak(t *testing.T, d *daemontest.Daemon) int64 {
	t.Helper()
	kb := peakRSS(d.PID())
	if kb == 0 {
		t.Fatal("no VmHWM for the daemon in /proc")
	}
	return int64(kb) << 10
}

// floodSize is the size of a flood: def, or KANDEV_TEST_FLOOD (e.g. 1G).
func floodSize(def string) string {
	if s := os.Getenv("KANDEV_TEST_FLOOD"); s != "" {
		return s
	}
	return def
}

// bystander is a task whose agent run stays up (held by an open subtask):
// it must live through another agent's attack.
func bystander(t *testing.T, d *daemontest.Daemon) core.Task {
	t.Helper()
	return heldParent(t, d, "mock: say bystander up")
}

// checkBystander asserts the bystander's run survived and still answers.
func checkBystander(t *testing.T, d *daemontest.Daemon, b core.Task) {
	t.Helper()
	got := get(t, d, b.ID)
	if got.Session == nil || got.Session.ID != b.Session.ID || got.Session.State != core.SessionWaitingForInput {
		t.Fatalf("bystander run did not survive: %+v", got.Session)
	}
	message(t, d, b.ID, "mock: say bystander still here")
	waitSaid(t, d, b.ID, "bystander still here")
	if s := get(t, d, b.ID).Session; s.ID != b.Session.ID {
		t.Fatalf("bystander was relaunched: session %s, want %s", s.ID, b.Session.ID)
	}
}

// A line longer than the SDK can read fails that session with the reason;
// the daemon reads at most the limit of it, whatever the line's size.
// KANDEV_TEST_FLOOD sets the line's size (default 1G: the daemon stops
// reading after 10 MiB, so the size costs nothing).
func TestHugeLineFailsSession(t *testing.T) {
	d := daemontest.Start(t)
	b := bystander(t, d)
	size := floodSize("1G")
	task := create(t, d, api.CreateTaskInput{Title: "huge line", Prompt: "mock: say about to\nmock: hugeline " + size, Start: true})
	got := waitState(t, d, task.ID, core.SessionFailed)
	if !strings.Contains(got.Session.Error, "agent wrote a line over 10 MiB") {
		t.Fatalf("session error %q", got.Session.Error)
	}
	groupGone(t, got.Session.PID)
	peak := daemonPeak(t, d)
	t.Logf("daemon peak RSS after a %s line: %.1f MB", size, float64(peak)/(1<<20))
	if peak >= rssLimit {
		t.Fatalf("daemon peak RSS %d bytes, want under %d", peak, rssLimit)
	}
	checkBystander(t, d, b)
	// The failed task runs again on the next message.
	message(t, d, task.ID, "mock: say back")
	waitSaid(t, d, task.ID, "back")
}

// A stderr flood is copied into a capped, rotated log with a small buffer:
// the disk holds at most two generations, the daemon's memory stays flat,
// the turn goes on, and a failure still shows the last words, read from
// the end of the log. KANDEV_TEST_FLOOD sets the volume (default 256M).
func TestStderrFloodIsCapped(t *testing.T) {
	d := daemontest.Start(t)
	b := bystander(t, d)
	size := floodSize("256M")
	task := create(t, d, api.CreateTaskInput{Title: "stderr flood",
		Prompt: "mock: stderrflood " + size + "\nmock: stderr LAST WORDS\nmock: crash", Start: true})
	// Pushing the flood through a pipe takes time in proportion to its
	// size; the opt-in large case gets a budget to match.
	budget := wait
	if os.Getenv("KANDEV_TEST_FLOOD") != "" {
		budget = 10 * time.Minute
	}
	start := time.Now()
	daemontest.Eventually(t, budget, "the flood to end", func() bool { return saidContains(t, d, task.ID, "stderrflood: wrote") })
	t.Logf("%s of stderr went through in %s", size, time.Since(start).Round(time.Millisecond))
	got := waitState(t, d, task.ID, core.SessionFailed)
	if !strings.Contains(got.Session.Error, "LAST WORDS") {
		t.Fatalf("session error %q lacks the last stderr line", got.Session.Error)
	}
	peak := daemonPeak(t, d)
	t.Logf("daemon peak RSS after %s of stderr: %.1f MB", size, float64(peak)/(1<<20))
	if peak >= rssLimit {
		t.Fatalf("daemon peak RSS %d bytes, want under %d", peak, rssLimit)
	}
	log := d.Home.SessionLog(got.Session.ID)
	var total int64
	for _, p := range []string{log, log + ".1"} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatalf("stderr log generation: %v", err)
		}
		total += st.Size()
	}
	const cap = 2*8<<20 + 4096 // two generations of 8 MiB and the rotation note
	if total > cap {
		t.Fatalf("stderr logs hold %d bytes, want at most %d", total, cap)
	}
	head, _ := os.ReadFile(log)
	if !strings.HasPrefix(string(head), "[kandev: stderr reached") {
		t.Fatalf("the rotated log does not say it was rotated: %.80q", head)
	}
	checkBystander(t, d, b)
}

// More session/update notifications in a row than the SDK queues (1024)
// do not close the connection: kandev holds the agent back instead, and
// records every one of them.
func TestNotificationBurst(t *testing.T) {
	const n = 6000
	d := daemontest.Start(t)
	task := create(t, d, api.CreateTaskInput{Title: "burst", Prompt: fmt.Sprintf("mock: burst %d", n), Start: true})
	waitSaid(t, d, task.ID, fmt.Sprintf("burst: sent %d", n))
	// The turn ended normally (the stall check may then hand the task to
	// the operator, which ends the run as completed); it did not fail.
	got := waitSettled(t, d, task.ID)
	if got.Session.State == core.SessionFailed {
		t.Fatalf("session failed after the burst: %q", got.Session.Error)
	}
	for _, m := range conversation(t, d, task.ID) {
		if m.Kind == core.MsgTurnEnd && !strings.Contains(m.Text, "end_turn") {
			t.Fatalf("turn ended %q, want end_turn", m.Text)
		}
	}
	text := strings.Join(said(t, d, task.ID), " ")
	for i := 0; i < n; i++ {
		if !strings.Contains(text, " "+strconv.Itoa(i)+" ") && !strings.HasPrefix(text, strconv.Itoa(i)+" ") {
			t.Fatalf("update %d of the burst was not recorded", i)
		}
	}
}

// A session/load that replays more updates than the SDK queues resumes the
// session instead of dropping the connection (a dropped one would fall back
// to session/new, another agent session id); the replay itself is history,
// never recorded as new conversation.
func TestLoadReplayBurst(t *testing.T) {
	const n = 6000
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_MOCK_RESUME=load", fmt.Sprintf("KANDEV_MOCK_REPLAY=%d", n)))
	task := heldParent(t, d, "mock: say one")
	first := task.Session
	if res, err := d.Client.StopTask(context.Background(), task.ID, api.StopTaskInput{}); err != nil || res.Result != "stopped" {
		t.Fatalf("stop: %+v %v", res, err)
	}
	groupGone(t, first.PID)
	message(t, d, task.ID, "mock: say after the replay")
	waitSaid(t, d, task.ID, "after the replay")
	got := get(t, d, task.ID)
	if got.Session.ID == first.ID || got.Session.AgentSessionID != first.AgentSessionID {
		t.Fatalf("session %s (agent %s): want a new run that loaded %s", got.Session.ID, got.Session.AgentSessionID, first.AgentSessionID)
	}
	if saidContains(t, d, task.ID, "replay ") {
		t.Fatal("the session/load replay was recorded as new conversation")
	}
}
