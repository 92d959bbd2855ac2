package daemon_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// Messages sent while a turn runs are queued and delivered in order, one
// turn each.
func TestQueueOrder(t *testing.T) {
	d := daemontest.Start(t)
	task := create(t, d, api.CreateTaskInput{Title: "queue", Prompt: "mock: say first\nmock: sleep 1500ms\nmock: say first done", Start: true})
	waitSaid(t, d, task.ID, "first")
	for _, m := range []string{"mock: say one", "mock: say two", "mock: say three"} {
		if res := message(t, d, task.ID, m); res.Status != "queued" {
			t.Fatalf("message while busy: status %s, want queued", res.Status)
		}
	}
	if q := get(t, d, task.ID).Queued; q != 3 {
		t.Fatalf("queued = %d, want 3", q)
	}
	waitSettled(t, d, task.ID)
	// Chunks of one turn merge into one message; compare the lines.
	got := strings.Split(strings.Join(said(t, d, task.ID), "\n"), "\n")
	want := []string{"first", "first done", "one", "two", "three"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("agent said %q, want %q", got, want)
	}
	// One turn per message: each prompt is followed by its own turn end.
	var seq []string
	for _, m := range conversation(t, d, task.ID) {
		switch m.Kind {
		case core.MsgPrompt, core.MsgTurnEnd:
			seq = append(seq, string(m.Kind))
		}
	}
	if strings.Join(seq, ",") != strings.Repeat("prompt,turn_end,", 4)[:len(strings.Repeat("prompt,turn_end,", 4))-1] {
		t.Fatalf("prompt/turn sequence %v", seq)
	}
	if s := get(t, d, task.ID).Session; s.Turns != 4 {
		t.Fatalf("session turns = %d, want 4", s.Turns)
	}
}

// A message to a task whose agent is idle starts a turn at once.
func TestMessageToIdleTaskStarts(t *testing.T) {
	d := daemontest.Start(t)
	task := heldParent(t, d, "mock: say ready")
	if res := message(t, d, task.ID, "mock: say again"); res.Status != "started" {
		t.Fatalf("message to idle task: %s, want started", res.Status)
	}
	waitSaid(t, d, task.ID, "again")
}

// heldParent creates a task with an open subtask and runs its first turn:
// the open subtask holds it (rule 4), so its agent stays up, idle.
func heldParent(t *testing.T, d *daemontest.Daemon, prompt string) core.Task {
	t.Helper()
	p := create(t, d, api.CreateTaskInput{Title: "parent"})
	create(t, d, api.CreateTaskInput{Title: "open subtask", ParentID: p.ID})
	if _, err := d.Client.StartTask(context.Background(), p.ID, api.StartTaskInput{Prompt: prompt}); err != nil {
		t.Fatal(err)
	}
	return waitIdle(t, d, p.ID)
}

// A task with a person: a message from that person hands it back to the
// role that worked it, which continues its own agent session.
func TestMessageHandsBackFromPerson(t *testing.T) {
	d := daemontest.Start(t)
	task := create(t, d, api.CreateTaskInput{Title: "chat", Prompt: "mock: say hello", Start: true})
	first := waitSettled(t, d, task.ID)
	if first.Assignee == nil || first.Assignee.Kind != "person" || !first.YourTurn {
		t.Fatalf("after a turn with no handoff the task should be the operator's: %+v", first.Assignee)
	}
	if res := message(t, d, task.ID, "mock: history"); res.Status != "handed_back" {
		t.Fatalf("message: %s, want handed_back", res.Status)
	}
	waitSaid(t, d, task.ID, "history:")
	got := waitSettled(t, d, task.ID)
	if got.Session.AgentSessionID != first.Session.AgentSessionID || got.Session.ID == first.Session.ID {
		t.Fatalf("want a new run continuing agent session %s, got run %s agent session %s", first.Session.AgentSessionID, got.Session.ID, got.Session.AgentSessionID)
	}
	if !saidContains(t, d, task.ID, "turn 2") {
		t.Fatalf("the agent did not continue its session: %q", said(t, d, task.ID))
	}
}

// When the agent's process is gone, the next message relaunches it and
// resumes the agent's own session.
func TestResumeAfterAgentExit(t *testing.T) {
	for _, mode := range []string{"resume", "load"} {
		t.Run(mode, func(t *testing.T) {
			d := daemontest.Start(t, daemontest.WithEnv("KANDEV_MOCK_RESUME="+mode))
			task := heldParent(t, d, "mock: say one")
			first := task.Session
			if err := syscall.Kill(-first.PID, syscall.SIGKILL); err != nil {
				t.Fatalf("kill agent: %v", err)
			}
			daemontest.Eventually(t, wait, "the exit to be noticed", func() bool {
				s := get(t, d, task.ID).Session
				return s.ID == first.ID && !s.State.Live()
			})
			message(t, d, task.ID, "mock: history")
			waitSaid(t, d, task.ID, "history:")
			task = waitIdle(t, d, task.ID)
			if task.Session.ID == first.ID {
				t.Fatalf("no new run after the agent exited")
			}
			if task.Session.AgentSessionID != first.AgentSessionID {
				t.Fatalf("agent session %s, want the earlier %s resumed", task.Session.AgentSessionID, first.AgentSessionID)
			}
			var hist string
			for _, s := range said(t, d, task.ID) {
				if strings.HasPrefix(s, "history:") {
					hist = s
				}
			}
			if !strings.Contains(hist, "turn 2") || !strings.Contains(hist, "earlier: ") {
				t.Fatalf("resumed agent remembers %q", hist)
			}
		})
	}
}

// An agent that cannot resume gets a new session; the turn still runs.
func TestNoResumeStartsNewSession(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_MOCK_RESUME=none"))
	task := heldParent(t, d, "mock: say one")
	first := task.Session
	syscall.Kill(-first.PID, syscall.SIGKILL)
	daemontest.Eventually(t, wait, "exit noticed", func() bool { return !get(t, d, task.ID).Session.State.Live() })
	message(t, d, task.ID, "mock: say two")
	waitSaid(t, d, task.ID, "two")
	if s := get(t, d, task.ID).Session; s.AgentSessionID == first.AgentSessionID {
		t.Fatalf("expected a new agent session")
	}
}

// A crashed agent fails its session with the reason; the daemon and other
// tasks carry on.
func TestAgentCrashFailsSession(t *testing.T) {
	d := daemontest.Start(t)
	crash := create(t, d, api.CreateTaskInput{Title: "crash", Prompt: "mock: say about to crash\nmock: crash", Start: true})
	task := waitState(t, d, crash.ID, core.SessionFailed)
	if !strings.Contains(task.Session.Error, "exit status 3") {
		t.Fatalf("session error %q does not give the exit status", task.Session.Error)
	}
	groupGone(t, task.Session.PID)
	ok := create(t, d, api.CreateTaskInput{Title: "fine", Prompt: "mock: say still here", Start: true})
	waitSaid(t, d, ok.ID, "still here")
	// The crashed task runs again on the next message.
	message(t, d, crash.ID, "mock: say back")
	waitSaid(t, d, crash.ID, "back")
}

// An agent that writes something other than ACP is failed and torn down.
func TestAgentGarbageFailsSession(t *testing.T) {
	d := daemontest.Start(t)
	task := create(t, d, api.CreateTaskInput{Title: "garbage", Prompt: "mock: garbage\nmock: hang", Start: true})
	got := waitState(t, d, task.ID, core.SessionFailed)
	if !strings.Contains(got.Session.Error, "not ACP") || !strings.Contains(got.Session.Error, "this is not json") {
		t.Fatalf("session error %q", got.Session.Error)
	}
	groupGone(t, got.Session.PID)
}

// An agent that never answers initialize is failed after the start
// timeout, and its process is killed.
func TestAgentNeverAnswers(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_AGENT_START_TIMEOUT=1s"))
	ctx := context.Background()
	if _, err := d.Client.AddProfile(ctx, core.Profile{Name: "silent", Command: "sleep", Args: []string{"600"}, MCP: true}); err != nil {
		t.Fatal(err)
	}
	task := create(t, d, api.CreateTaskInput{Title: "silent", Profile: "silent", Prompt: "hello", Start: true})
	got := waitState(t, d, task.ID, core.SessionFailed)
	if !strings.Contains(got.Session.Error, "did not answer in time") {
		t.Fatalf("session error %q", got.Session.Error)
	}
	groupGone(t, got.Session.PID)
	// The message was never delivered: it is still queued, nothing lost.
	if got.Queued != 1 {
		t.Fatalf("queued = %d, want the undelivered prompt kept", got.Queued)
	}
}

// A profile whose command does not exist does not fail a run: the task
// says why and keeps its queue.
func TestMissingCommandWaits(t *testing.T) {
	d := daemontest.Start(t)
	ctx := context.Background()
	if _, err := d.Client.AddProfile(ctx, core.Profile{Name: "ghost", Command: "kandev-no-such-agent", MCP: true}); err != nil {
		t.Fatal(err)
	}
	task := create(t, d, api.CreateTaskInput{Title: "ghost", Profile: "ghost", Prompt: "hello", Start: true})
	daemontest.Eventually(t, wait, "the reason to show", func() bool {
		for _, m := range conversation(t, d, task.ID) {
			if strings.Contains(m.Text, "kandev-no-such-agent not found") {
				return true
			}
		}
		return false
	})
	got := get(t, d, task.ID)
	if got.Session != nil || got.Queued != 1 {
		t.Fatalf("session %+v queued %d: want no run and the prompt kept", got.Session, got.Queued)
	}
}

// Stopping a hung turn leaves no process of the agent's group behind.
func TestStopTearsDownProcessGroup(t *testing.T) {
	d := daemontest.Start(t)
	task := create(t, d, api.CreateTaskInput{Title: "hang", Prompt: "mock: call list_tasks_kandev {}\nmock: hang", Start: true})
	waitSaid(t, d, task.ID, "list_tasks_kandev")
	running := get(t, d, task.ID).Session
	res, err := d.Client.StopTask(context.Background(), task.ID, api.StopTaskInput{})
	if err != nil || res.Result != "stopped" {
		t.Fatalf("stop: %+v %v", res, err)
	}
	// The group holds the agent and the kandev mcp bridge it started.
	groupGone(t, running.PID)
	got := get(t, d, task.ID)
	if got.Session.State != core.SessionCancelled || got.Status != core.StatusReview {
		t.Fatalf("after stop: session %s status %s", got.Session.State, got.Status)
	}
}

func TestSocketAndHomePermissions(t *testing.T) {
	d := daemontest.Start(t)
	st, err := os.Stat(d.Home.Socket())
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, want a socket with 0600", st.Mode())
	}
	hs, err := os.Stat(d.Home.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if hs.Mode().Perm() != 0o700 {
		t.Fatalf("home mode %v, want 0700", hs.Mode().Perm())
	}
	// One daemon per home: a second one refuses.
	r := d.Run("serve")
	if r.Code == 0 || !strings.Contains(r.Stderr, "already running") {
		t.Fatalf("second daemon: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if _, err := os.Stat(filepath.Join(d.Home.Dir, "kandev.db")); err != nil {
		t.Fatal(err)
	}
}

// An agent held between turns (here by an open subtask) is ended after the
// idle timeout and resumed by the next message.
func TestIdleAgentIsEndedAndResumed(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_IDLE_TIMEOUT=400ms"))
	task := heldParent(t, d, "mock: say one")
	first := task.Session
	daemontest.Eventually(t, wait, "the idle run to end", func() bool {
		s := get(t, d, task.ID).Session
		return s.ID == first.ID && s.State == core.SessionCompleted
	})
	groupGone(t, first.PID)
	if s := get(t, d, task.ID).Session; !strings.Contains(s.EndReason, "idle for 400ms") {
		t.Fatalf("end reason %q", s.EndReason)
	}
	message(t, d, task.ID, "mock: history")
	waitSaid(t, d, task.ID, "turn 2")
	if s := get(t, d, task.ID).Session; s.AgentSessionID != first.AgentSessionID {
		t.Fatalf("agent session %s, want %s resumed", s.AgentSessionID, first.AgentSessionID)
	}
}

// A home whose socket path the kernel would refuse is refused up front,
// with the reason, instead of a daemon that dies at bind.
func TestHomeTooDeepForSocket(t *testing.T) {
	bin := daemontest.Binary(t)
	deep := filepath.Join(t.TempDir(), strings.Repeat("d", 120))
	cmd := exec.Command(bin, "task", "list", "--home", deep)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "unix sockets allow 107") {
		t.Fatalf("exit %v: %s", err, out)
	}
	if _, err := os.Stat(deep); !os.IsNotExist(err) {
		t.Fatalf("the refused home was created: %v", err)
	}
}
