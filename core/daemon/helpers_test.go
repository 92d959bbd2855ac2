package daemon_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// wait is generous: these tests wait for real processes, they never time
// them.
const wait = 30 * time.Second

func create(t *testing.T, d *daemontest.Daemon, in api.CreateTaskInput) core.Task {
	t.Helper()
	return d.CreateTask(t, in)
}

func get(t *testing.T, d *daemontest.Daemon, id string) core.Task {
	t.Helper()
	task, err := d.Client.GetTask(context.Background(), id)
	if err != nil {
		t.Fatalf("get task %s: %v", id, err)
	}
	return task
}

func conversation(t *testing.T, d *daemontest.Daemon, id string) []core.Message {
	t.Helper()
	return d.Conversation(t, id)
}

// said returns what the agent said on a task, one entry per agent message.
func said(t *testing.T, d *daemontest.Daemon, id string) []string {
	t.Helper()
	var out []string
	for _, m := range conversation(t, d, id) {
		if m.Kind == core.MsgAgent {
			out = append(out, strings.TrimSpace(m.Text))
		}
	}
	return out
}

func saidContains(t *testing.T, d *daemontest.Daemon, id, sub string) bool {
	t.Helper()
	for _, s := range said(t, d, id) {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// waitSaid waits until the task's agent said something containing sub.
func waitSaid(t *testing.T, d *daemontest.Daemon, id, sub string) {
	t.Helper()
	daemontest.Eventually(t, wait, "task "+id+" agent to say "+sub, func() bool { return saidContains(t, d, id, sub) })
}

func waitState(t *testing.T, d *daemontest.Daemon, id string, want core.SessionState) core.Task {
	t.Helper()
	var task core.Task
	daemontest.Eventually(t, wait, "task "+id+" session "+string(want), func() bool {
		task = get(t, d, id)
		return task.Session != nil && task.Session.State == want
	})
	return task
}

// waitIdle waits until the task's agent waits for input with nothing
// queued: every turn it had is over and its run is still alive (the task is
// held, for instance by an open subtask).
func waitIdle(t *testing.T, d *daemontest.Daemon, id string) core.Task {
	t.Helper()
	var task core.Task
	daemontest.Eventually(t, wait, "task "+id+" to go idle", func() bool {
		task = get(t, d, id)
		return task.Session != nil && task.Session.State == core.SessionWaitingForInput && task.Queued == 0
	})
	return task
}

// waitSettled waits until no turn runs or waits to run on the task.
func waitSettled(t *testing.T, d *daemontest.Daemon, id string) core.Task {
	t.Helper()
	var task core.Task
	daemontest.Eventually(t, wait, "task "+id+" to settle", func() bool {
		task = get(t, d, id)
		if task.Session == nil || task.Queued > 0 {
			return false
		}
		switch task.Session.State {
		case core.SessionStarting, core.SessionRunning, core.SessionCreated:
			return false
		}
		return true
	})
	return task
}

func message(t *testing.T, d *daemontest.Daemon, id, text string) api.MessageResult {
	t.Helper()
	res, err := d.Client.MessageTask(context.Background(), id, api.MessageInput{Text: text})
	if err != nil {
		t.Fatalf("message %s: %v", id, err)
	}
	return res
}

// processAlive reports whether a process (or, for a negative pid, any
// process of the group) still exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

// groupGone waits until no process of the group is left.
func groupGone(t *testing.T, pgid int) {
	t.Helper()
	daemontest.Eventually(t, wait, "process group to be gone", func() bool { return !processAlive(-pgid) })
}

func prompts(msgs []core.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Kind == core.MsgPrompt {
			out = append(out, m.Text)
		}
	}
	return out
}

func metaField(m core.Message, key string) string {
	var meta map[string]any
	_ = json.Unmarshal(m.Meta, &meta)
	s, _ := meta[key].(string)
	return s
}

// logTaskOnFailure logs, when the test fails, what a stranger needs to see
// of the task: its waiting reason, session and stall, its conversation and
// its session's log (and whatever more adds, e.g. an sshd's log).
func logTaskOnFailure(t *testing.T, d *daemontest.Daemon, id string, more func()) {
	t.Helper()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		got := get(t, d, id)
		t.Logf("task: waiting %q session %+v stalled %+v", got.Waiting, got.Session, got.Stalled)
		for _, m := range conversation(t, d, id) {
			t.Logf("%s: %s", m.Kind, m.Text)
		}
		if got.Session != nil {
			b, _ := os.ReadFile(d.Home.SessionLog(got.Session.ID))
			t.Logf("session log:\n%s", b)
		}
		if more != nil {
			more()
		}
	})
}

// writeFiles lays out files (path to body) with their parent directories,
// each file with mode.
func writeFiles(t *testing.T, mode os.FileMode, files map[string]string) {
	t.Helper()
	for p, body := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// needNode is node's path; CI installs it, elsewhere its absence skips.
func needNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is not installed")
		}
		t.Skip("node is not installed")
	}
	return node
}
