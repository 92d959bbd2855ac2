package cmd_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
	"github.com/kandev/kandev/core/daemonclient"
)

// readCommands are the commands that only read: after kandev daemon stop
// none of them starts a daemon (issue 38, ADR 0072).
func readCommands(id string) [][]string {
	return [][]string{
		{"task", "list"}, {"task", "list", "--json"}, {"task", "show", id}, {"task", "log", id},
		{"task", "stats"}, {"task", "diff", id}, {"task", "path", id}, {"task", "shell", id, "--", "true"},
		{"task", "queue", id}, {"task", "review", id, "--list"}, {"task", "budget", id},
		{"wait", id}, {"events"}, {"usage"},
		{"profile", "list"}, {"profile", "show", "mock"}, {"role", "list"}, {"role", "show", "x"},
		{"person", "list"}, {"host", "list"}, {"host", "show", "x"}, {"host", "check", "x"},
	}
}

// After kandev daemon stop, a read says no daemon runs and how to start
// one, and starts none: no socket, no lock held, the interrupted run not
// resumed. A command that changes work starts it, and says which
// interrupted run the new daemon resumed; daemon status says it too.
func TestReadsDoNotStartAStoppedDaemon(t *testing.T) {
	d := daemontest.Start(t)
	task := d.CreateTask(t, api.CreateTaskInput{Title: "busy", Prompt: "mock: say up\nmock: hang", Start: true})
	daemontest.Eventually(t, 30*time.Second, "the agent to say up", func() bool {
		for _, m := range d.Conversation(t, task.ID) {
			if m.Kind == core.MsgAgent && strings.Contains(m.Text, "up") {
				return true
			}
		}
		return false
	})
	d.Stop() // its run is interrupted, its prompt queued again

	notRunning := func(what string) {
		t.Helper()
		if _, err := os.Stat(d.Home.Socket()); err == nil {
			t.Fatalf("after %s the daemon's socket %s exists", what, d.Home.Socket())
		}
		st, err := daemonclient.Probe(context.Background(), d.Home)
		if err != nil {
			t.Fatal(err)
		}
		if st.Running {
			t.Fatalf("after %s a daemon runs (pid %d)", what, st.PID)
		}
	}
	notRunning("daemon stop")
	for _, args := range readCommands(task.ID) {
		what := "kandev " + strings.Join(args, " ")
		r := d.Run(args...)
		if r.Code != 1 || r.Stdout != "" {
			t.Errorf("%s: exit %d, stdout %q; want 1 and nothing", what, r.Code, r.Stdout)
		}
		if args[len(args)-1] == "--json" {
			if !strings.Contains(r.Stderr, `"code":"UNAVAILABLE"`) || !strings.Contains(r.Stderr, "kandev daemon start") {
				t.Errorf("%s: stderr %q", what, r.Stderr)
			}
		} else if want := "kandev: no kandev daemon is running for " + d.Home.Dir + "; a command that only reads does not start one, so a stopped daemon stays stopped (start it with: kandev daemon start)\n"; r.Stderr != want {
			t.Errorf("%s: stderr\n%q\nwant\n%q", what, r.Stderr, want)
		}
		notRunning(what)
	}
	r := d.Run("status")
	if r.Code != 0 || !strings.Contains(r.Stderr, "No kandev daemon is running for "+d.Home.Dir) {
		t.Errorf("kandev status: exit %d, stderr %q", r.Code, r.Stderr)
	}
	notRunning("kandev status")

	// A write starts it; the new daemon resumes the interrupted run and
	// the command that started it names that run, once.
	r = d.Run("task", "create", "second")
	if r.Code != 0 {
		t.Fatalf("task create: exit %d\n%s", r.Code, r.Stderr)
	}
	want := "it resumed 1 interrupted run: " + task.ID + ` "busy" (kandev daemon stop halts them)`
	if strings.Count(r.Stderr, want) != 1 || !strings.HasPrefix(r.Stderr, "kandev: started the kandev daemon (pid ") {
		t.Fatalf("task create's stderr %q, want once %q", r.Stderr, want)
	}
	if out := d.MustRun("daemon", "status"); !strings.Contains(out, "\nresumed:  "+task.ID+" (interrupted runs it resumed at its start)\n") {
		t.Fatalf("daemon status:\n%s", out)
	}
	// A second command talks to the running daemon and says nothing of it.
	if r := d.Run("task", "create", "third"); r.Code != 0 || strings.Contains(r.Stderr, "resumed") {
		t.Fatalf("second task create: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if r := d.Run("task", "list"); r.Code != 0 || !strings.Contains(r.Stdout, "second") {
		t.Fatalf("task list with the daemon running: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// A read with no daemon at all, in a home never used, starts none either,
// while daemon start does, once.
func TestDaemonStartStartsOnce(t *testing.T) {
	d := daemontest.Start(t)
	d.Stop()
	if r := d.Run("task", "list"); r.Code != 1 || !strings.Contains(r.Stderr, "kandev daemon start") {
		t.Fatalf("task list: exit %d, stderr %q", r.Code, r.Stderr)
	}
	r := d.Run("daemon", "start")
	if r.Code != 0 || !strings.HasPrefix(r.Stderr, "Started the kandev daemon (pid ") {
		t.Fatalf("daemon start: exit %d, stderr %q", r.Code, r.Stderr)
	}
	r = d.Run("daemon", "start")
	if r.Code != 0 || !strings.HasPrefix(r.Stderr, "The kandev daemon already runs (pid ") {
		t.Fatalf("second daemon start: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if r := d.Run("task", "list"); r.Code != 0 {
		t.Fatalf("task list after daemon start: exit %d, stderr %q", r.Code, r.Stderr)
	}
}
