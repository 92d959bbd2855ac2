package daemon_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
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
		task := create(t, d, api.CreateTaskInput{Title: name, CWD: work, Host: "auto", Start: true,
			Prompt: "mock: say up " + name + "\nmock: hang"})
		if task.Host != "auto" {
			t.Fatalf("task created with --host auto: host %q before its first run", task.Host)
		}
		ids = append(ids, task.ID)
		if name == "first" {
			// The first holds the slot before the others ask: placements
			// that race are served in the order their loops reach the
			// host (the order is kept among those that wait, ADR 0061),
			// and a loaded machine may run the second's loop first.
			waitSaid(t, d, task.ID, "up first")
		}
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
			got := get(t, d, id)
			return strings.HasPrefix(got.Waiting, "host slots full: lb (1/1 agents") && got.WaitCause == core.WaitHostSlots
		})
	}
	// The one slot is taken by one task at a time, in creation order: the
	// first, then the second, then the third.
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
			named := create(t, d, api.CreateTaskInput{Title: "named", CWD: work, Host: "lb", Start: true, Prompt: "mock: say named"})
			waitSlotFull(named.ID)
			if _, err := d.Client.StopTask(ctx, named.ID, api.StopTaskInput{}); err != nil {
				t.Fatal(err)
			}
			// A subtask of a placed task inherits its host.
			if kid := create(t, d, api.CreateTaskInput{Title: "kid", ParentID: id}); kid.Host != "lb" {
				t.Fatalf("child of a task placed on lb: host %q", kid.Host)
			}
		}
		sid := got.Session.ID
		if res, err := d.Client.StopTask(ctx, id, api.StopTaskInput{}); err != nil || res.Result != "stopped" {
			t.Fatalf("stop %s: %+v %v", id, res, err)
		}
		sessionGone(t, sid, "stop")
	}

	// A container sandbox on a host needs its profile's image, as here
	// (ADR 0062: the host's engine and image are checked at the run).
	for _, mode := range []string{"docker", "podman"} {
		r := d.Run("task", "create", "boxed", "--cwd", work, "--host", "lb", "--sandbox", mode)
		if r.Code == 0 || !strings.Contains(r.Stderr, "sandbox "+mode+" needs an image") {
			t.Fatalf("--sandbox %s on a host: exit %d, %s", mode, r.Code, r.Stderr)
		}
	}

	// The configuration's host is a top-level task's default.
	d.MustRun("config", "set", "host", "lb")
	if got := create(t, d, api.CreateTaskInput{Title: "default", CWD: work}); got.Host != "lb" {
		t.Fatalf("task created with config host lb: host %q", got.Host)
	}
	d.Stop()
	mastersGone(t, d.Home.Dir, "after the daemon stopped")
}

// TestHostSetupAndIncludes: a task's worktree on a host gets what it gets
// here: the files .worktreeinclude names (ignored by git, so not pushed)
// and .kandev/setup, run on the host in the host's worktree, once, with
// nothing it started (backgrounded or setsid) left when it ends.
func TestHostSetupAndIncludes(t *testing.T) {
	h := sshtest.Start(t)
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_SSH_CONFIG="+h.Config))
	dir := h.RemoteDir + "/kandev"
	d.MustRun("host", "add", "lb", "--ssh", h.Alias, "--dir", dir)
	repo := gitRepo(t)
	write := func(rel, body string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(repo, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(".gitignore", ".env\npids\nsetup.log\n", 0o644)
	write(".worktreeinclude", ".env\n", 0o644)
	write(".env", "SECRET=1\n", 0o600)
	write(".kandev/setup", "#!/bin/sh\necho \"setup as $(id -un) on $KANDEV_BRANCH\"\necho ran >> setup.log\n"+
		"sleep 300 </dev/null >/dev/null 2>&1 &\necho $! >> pids\n"+
		"setsid sleep 300 </dev/null >/dev/null 2>&1 &\necho $! >> pids\n", 0o755)
	for _, args := range [][]string{{"add", ".gitignore", ".worktreeinclude", ".kandev"}, {"commit", "-q", "-m", "setup"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}

	task := create(t, d, api.CreateTaskInput{Title: "set up", CWD: repo, Host: "lb", Start: true, Prompt: "mock: say up"})
	waitSaid(t, d, task.ID, "up")
	got := get(t, d, task.ID)
	wt := filepath.Dir(mustGlob1(t, filepath.Join(dir, "worktrees", "*", ".git")))
	if b, err := os.ReadFile(filepath.Join(wt, ".env")); err != nil || string(b) != "SECRET=1\n" {
		t.Fatalf(".env in the host's worktree: %q %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(wt, ".env")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf(".env's mode on the host: %v %v", fi, err)
	}
	noted := false
	for _, m := range conversation(t, d, task.ID) {
		if m.Kind == core.MsgStatus && strings.Contains(m.Text, "worktree setup:\nsetup as "+sshtest.RemoteUser+" on "+got.Workspace.Branch) {
			noted = true
		}
	}
	if !noted {
		t.Fatalf("no note of the setup's output on the host: %+v", conversation(t, d, task.ID))
	}
	b, err := os.ReadFile(filepath.Join(wt, "pids"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(b)) {
		pid, _ := strconv.Atoi(f)
		daemontest.Eventually(t, wait, "the setup's child "+f+" ended", func() bool { return syscall.Kill(pid, 0) == syscall.ESRCH })
	}
	sessionGone(t, waitSettled(t, d, task.ID).Session.ID, "the first run's end")

	// A later run does not set the worktree up again.
	message(t, d, task.ID, "mock: say again")
	waitSaid(t, d, task.ID, "again")
	if b, _ := os.ReadFile(filepath.Join(wt, "setup.log")); string(b) != "ran\n" {
		t.Fatalf("setup.log on the host after two runs: %q", b)
	}
	sessionGone(t, waitSettled(t, d, task.ID).Session.ID, "the second run's end")
	d.Stop()
	mastersGone(t, d.Home.Dir, "after the daemon stopped")
}
