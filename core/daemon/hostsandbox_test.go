package daemon_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
	"github.com/kandev/kandev/internal/sshtest"
)

// Sandboxes on hosts (docs/hosts.md, ADR 0062): a bwrap task's agent on
// the loopback host runs inside bubblewrap there, as the remote account,
// with the view built from the host's own paths; it tries with its own
// shell what a prompt-injected agent would.

// procComms are the command names of the session's processes.
func procComms(sid string) []string {
	var out []string
	for _, pid := range agent.SessionProcs(sid) {
		if b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm")); err == nil {
			out = append(out, strings.TrimSpace(string(b)))
		}
	}
	return out
}

func TestHostSandboxBwrap(t *testing.T) {
	needBwrap(t)
	h := sshtest.Start(t)
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_SSH_CONFIG="+h.Config, "KANDEV_PERMISSION=allow"))
	dir := h.RemoteDir + "/kandev"
	remoteHome := filepath.Dir(h.RemoteDir)
	d.MustRun("host", "add", "lb", "--ssh", h.Alias, "--dir", dir)
	repo := gitRepo(t)
	ctx := context.Background()

	tag := filepath.Base(h.RemoteDir)
	pwnedHome := filepath.Join(remoteHome, "pwned-"+tag)
	pwnedDir := filepath.Join(dir, "state", "pwned")
	script := strings.Join([]string{
		"mock: say up",
		"mock: sh echo x > " + pwnedHome + " && echo wrote-home",
		"mock: sh mkdir -p " + filepath.Dir(pwnedDir) + " && echo x > " + pwnedDir + " && echo wrote-dir",
		"mock: sh cat " + filepath.Join(h.RemoteDir, "authorized_keys"),
		"mock: sh ls " + filepath.Join(dir, "run"),
		"mock: sh chmod 0777 " + filepath.Join(dir, "bin", "kandev"),
		"mock: sh git config core.fsmonitor 'touch " + pwnedHome + "'",
		"mock: sh echo written > by-sh.txt && git add by-sh.txt && git -c user.name=a -c user.email=a@example.com commit -qm agent && echo committed",
	}, "\n") + "\n" + call("list_tasks_kandev", map[string]any{}) + "\n" +
		call("create_task_kandev", map[string]any{"title": "escape", "sandbox": "none", "start": false}) +
		"\nmock: say all finished\nmock: hang"
	task := create(t, d, api.CreateTaskInput{Title: "boxed on the host", CWD: repo, Host: "lb", Sandbox: core.SandboxBwrap, Start: true, Prompt: script})
	logTaskOnFailure(t, d, task.ID, nil)
	if task.Sandbox != core.SandboxBwrap || task.Host != "lb" {
		t.Fatalf("task sandbox %q host %q", task.Sandbox, task.Host)
	}
	waitSaid(t, d, task.ID, "all finished")
	out := shSaid(t, d, task.ID, 7)
	first := get(t, d, task.ID).Session
	sid := first.ID

	// The agent runs in bubblewrap on the host, as the remote account.
	comms := procComms(sid)
	if !strings.Contains(strings.Join(comms, " "), "bwrap") {
		t.Fatalf("no bwrap among the session's processes: %v", comms)
	}
	for pid, uid := range procUIDs(t, sid) {
		if uid != h.RemoteUID && uid != os.Getuid() {
			t.Errorf("process %d of uid %d", pid, uid)
		}
	}
	for _, want := range []string{
		"wrote-home", // into its private home, not the account's
		"chmod: changing permissions of '" + filepath.Join(dir, "bin", "kandev") + "': Read-only file system",
		"config: Read-only file system", // the host repository's
		"committed",                     // its own branch, in kandev's repository there
		"result list_tasks_kandev",
		"less confined than its parent task " + task.ID + "'s sandbox bwrap",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the agent's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ssh-") || strings.Contains(out, "ecdsa-") {
		t.Errorf("the agent read the remote account's files:\n%s", out)
	}
	// Of kandev's directory on the host it sees its own socket only.
	if i := strings.Index(out, "sh: "+sid+".sock"); i < 0 {
		t.Errorf("ls of the run directory does not show only the session's socket:\n%s", out)
	}
	for _, p := range []string{pwnedHome, pwnedDir} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("the confined agent wrote %s on the host: %v", p, err)
		}
	}
	// What it wrote under the account's home went to the task's private
	// home on the host.
	if _, err := os.Stat(filepath.Join(dir, "sandboxes", task.ID, "home", filepath.Base(pwnedHome))); err != nil {
		t.Errorf("the private home on the host lacks the agent's file: %v", err)
	}
	if b, _ := os.ReadFile(mustGlob1(t, filepath.Join(dir, "repos", "*.git", "config"))); strings.Contains(string(b), "fsmonitor") {
		t.Errorf("the agent wrote the host repository's config:\n%s", b)
	}
	// Its work comes back for review as for any task on a host.
	if diff := d.MustRun("task", "diff", task.ID); !strings.Contains(diff, "by-sh.txt") {
		t.Errorf("task diff lacks the confined agent's commit:\n%s", diff)
	}

	// A stop leaves nothing of the session on either side.
	if res, err := d.Client.StopTask(ctx, task.ID, api.StopTaskInput{}); err != nil || res.Result != "stopped" {
		t.Fatalf("stop: %+v %v", res, err)
	}
	sessionGone(t, sid, "stop")
	daemontest.Eventually(t, wait, "the session's socket removed on the host", func() bool {
		m, _ := filepath.Glob(filepath.Join(dir, "run", sid+".sock"))
		return len(m) == 0
	})

	// The next run resumes the agent's session: its state lives in the
	// task's private home on the host, kept across sessions.
	message(t, d, task.ID, "mock: history")
	daemontest.Eventually(t, wait, "the resumed history", func() bool { return saidContains(t, d, task.ID, "history: ") })
	if !saidContains(t, d, task.ID, "history: session "+first.AgentSessionID+" turn 2;") {
		t.Fatalf("not resumed in the sandbox on the host (agent session %s): %q", first.AgentSessionID, said(t, d, task.ID))
	}
	if s := waitSettled(t, d, task.ID).Session; s != nil {
		sessionGone(t, s.ID, "the second run's end")
	}

	// The confinement holds for its children on the host too.
	if _, err := d.Client.CreateTask(ctx, api.CreateTaskInput{Title: "shed", ParentID: task.ID, Sandbox: core.SandboxNone}); err == nil ||
		!strings.Contains(err.Error(), "less confined") {
		t.Fatalf("a child of a bwrap parent on the host with --sandbox none: %v", err)
	}
	kid := create(t, d, api.CreateTaskInput{Title: "kid", ParentID: task.ID})
	if kid.Host != "lb" || kid.Sandbox != core.SandboxBwrap {
		t.Fatalf("child host %q sandbox %q, want lb and bwrap", kid.Host, kid.Sandbox)
	}
	// An autopilot task on a host gets bubblewrap by default.
	auto := create(t, d, api.CreateTaskInput{Title: "autopilot", CWD: repo, Host: "lb", Autopilot: true})
	if auto.Sandbox != core.SandboxBwrap {
		t.Fatalf("autopilot task on a host: sandbox %q, want bwrap", auto.Sandbox)
	}
	// A container on a host needs its profile's image, as here.
	if _, err := d.Client.CreateTask(ctx, api.CreateTaskInput{Title: "boxed", CWD: repo, Host: "lb", Sandbox: core.SandboxDocker}); err == nil ||
		!strings.Contains(err.Error(), "needs an image") {
		t.Fatalf("docker on a host: %v", err)
	}

	// What the host lacks fails the run, which climbs, never unconfined.
	d.MustRun("profile", "add", "ghost", "--command", "kandev-no-such-agent")
	ghost := create(t, d, api.CreateTaskInput{Title: "ghost", Profile: "ghost", CWD: repo, Host: "lb", Sandbox: core.SandboxBwrap, Start: true, Prompt: "hello"})
	var failed core.Task
	daemontest.Eventually(t, wait, "the run without its command on the host to fail and climb", func() bool {
		failed = get(t, d, ghost.ID)
		return failed.Session != nil && failed.Session.State == core.SessionFailed && failed.Stalled != nil
	})
	if !strings.Contains(failed.Session.Error, "sandbox bwrap on host lb: the agent's command kandev-no-such-agent is not on the remote account's PATH") {
		t.Fatalf("failed run's error: %q", failed.Session.Error)
	}

	d.Stop()
	homeGone(t, d, "after the daemon stopped")
	mastersGone(t, d.Home.Dir, "after the daemon stopped")
}

// A confined task's .kandev/setup runs in its sandbox on the host too
// (ADR 0065): bubblewrap's hostname, its private home, and nothing
// written to the remote account's own.
func TestHostSandboxSetupRunsConfined(t *testing.T) {
	needBwrap(t)
	h := sshtest.Start(t)
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_SSH_CONFIG="+h.Config, "KANDEV_PERMISSION=allow"))
	dir := h.RemoteDir + "/kandev"
	remoteHome := filepath.Dir(h.RemoteDir)
	d.MustRun("host", "add", "lb", "--ssh", h.Alias, "--dir", dir)
	repo := gitRepo(t)
	pwned := filepath.Join(remoteHome, "pwned-setup-"+filepath.Base(h.RemoteDir))
	if err := os.MkdirAll(filepath.Join(repo, ".kandev"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".kandev", "setup"), []byte("#!/bin/sh\necho \"setup on $(hostname)\"\necho x > "+pwned+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", ".kandev"}, {"commit", "-q", "-m", "setup"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	task := create(t, d, api.CreateTaskInput{Title: "set up boxed", CWD: repo, Host: "lb", Sandbox: core.SandboxBwrap, Start: true, Prompt: "mock: say up"})
	logTaskOnFailure(t, d, task.ID, nil)
	waitSaid(t, d, task.ID, "up")
	noted := false
	for _, m := range conversation(t, d, task.ID) {
		if m.Kind == core.MsgStatus && strings.Contains(m.Text, "worktree setup:\nsetup on kandev-sandbox") {
			noted = true
		}
	}
	if !noted {
		t.Fatalf("the setup did not run in the sandbox: %+v", conversation(t, d, task.ID))
	}
	if _, err := os.Stat(pwned); !os.IsNotExist(err) {
		t.Fatalf("the setup wrote the remote account's home: %v", err)
	}
}
