package daemon_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
	"github.com/kandev/kandev/internal/sshtest"
)

func decodeJSON[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
	return v
}

// sshMasters lists ssh processes serving a control socket under home.
func sshMasters(home string) []string {
	out, _ := exec.Command("pgrep", "-f", "ControlPath="+filepath.Join(home, "ssh")).Output()
	return strings.Fields(string(out))
}

func mastersGone(t *testing.T, home, when string) {
	t.Helper()
	daemontest.Eventually(t, 30*time.Second, "no ssh master "+when, func() bool { return len(sshMasters(home)) == 0 })
}

// TestHostLifecycle runs the host commands against a real sshd on the
// loopback interface: add, list, show, check (with ssh's error when the
// host is down), tasks placed on it and inherited by subtasks, a refused
// removal while tasks are on it, and no ssh connection left after the
// daemon stops.
func TestHostLifecycle(t *testing.T) {
	h := sshtest.Start(t)
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_SSH_CONFIG="+h.Config))
	dir := h.RemoteDir + "/kandev"

	// A destination ssh would read as an option is refused.
	if r := d.Run("host", "add", "evil", "--ssh", "-oProxyCommand=true"); r.Code == 0 ||
		!strings.Contains(r.Stderr, "bad host") {
		t.Fatalf("option as destination: exit %d, %s", r.Code, r.Stderr)
	}
	d.MustRun("host", "add", "lb", "--ssh", h.Alias, "--dir", dir, "--max-agents", "2")
	if r := d.Run("host", "add", "lb", "--ssh", h.Alias); r.Code == 0 {
		t.Fatal("a second host lb was added")
	}
	if r := d.Run("host", "add", "local", "--ssh", h.Alias); r.Code == 0 || !strings.Contains(r.Stderr, "reserved") {
		t.Fatalf("host named local: exit %d, %s", r.Code, r.Stderr)
	}
	list := decodeJSON[[]core.Host](t, d.MustRun("host", "list", "--json"))
	if len(list) != 1 || list[0].Name != "lb" || list[0].SSH != h.Alias || list[0].Dir != dir || list[0].MaxAgents != 2 {
		t.Fatalf("host list: %+v", list)
	}
	if out := d.MustRun("host", "list"); !strings.Contains(out, "lb") || !strings.Contains(out, h.Alias) {
		t.Fatalf("host list text:\n%s", out)
	}

	c := decodeJSON[api.HostCheck](t, d.MustRun("host", "check", "lb", "--json"))
	if !c.Reachable || !strings.HasPrefix(c.Git, "git version") || c.Kandev.Present ||
		c.Kandev.Path != dir+"/bin/kandev" || c.FreeSlots != 2 || c.MaxAgents != 2 {
		t.Fatalf("host check: %+v", c)
	}
	if out := d.MustRun("host", "check", "lb"); !strings.Contains(out, "reachable") || !strings.Contains(out, "2 of 2 free") {
		t.Fatalf("host check text:\n%s", out)
	}

	// Tasks on the host: the parent is placed there, a child inherits it,
	// a child given --host local runs here.
	work := t.TempDir()
	parent := decodeJSON[core.Task](t, d.MustRun("task", "create", "on the host", "--cwd", work, "--host", "lb", "--json"))
	if parent.Host != "lb" {
		t.Fatalf("task create --host lb: host %q", parent.Host)
	}
	child := decodeJSON[core.Task](t, d.MustRun("task", "create", "child", "--parent", parent.ID, "--json"))
	local := decodeJSON[core.Task](t, d.MustRun("task", "create", "here", "--parent", parent.ID, "--host", "local", "--json"))
	if child.Host != "lb" || local.Host != "" {
		t.Fatalf("child host %q (want lb), local child host %q (want none)", child.Host, local.Host)
	}
	if out := d.MustRun("task", "show", parent.ID); !strings.Contains(out, "host:") || !strings.Contains(out, "lb") {
		t.Fatalf("task show:\n%s", out)
	}
	if r := d.Run("task", "create", "nowhere", "--cwd", work, "--host", "nosuch"); r.Code == 0 || !strings.Contains(r.Stderr, "unknown host") {
		t.Fatalf("unknown host: exit %d, %s", r.Code, r.Stderr)
	}
	if got := decodeJSON[core.Host](t, d.MustRun("host", "show", "lb", "--json")); got.Tasks != 2 {
		t.Fatalf("host show tasks = %d, want 2", got.Tasks)
	}

	// Started, a task on the host runs there, never on this machine: a
	// task without a worktree gets an empty directory of its own there.
	started := decodeJSON[core.Task](t, d.MustRun("task", "create", "start me", "--cwd", work, "--host", "lb",
		"--prompt", "mock: write here.txt on the host\nmock: hang", "--start", "--json"))
	waitSaid(t, d, started.ID, "wrote here.txt")
	if m, _ := filepath.Glob(filepath.Join(dir, "worktrees", "task-*", "here.txt")); len(m) != 1 {
		t.Fatalf("the file the task on the host wrote: %v", m)
	}
	if _, err := os.Stat(filepath.Join(work, "here.txt")); err == nil {
		t.Fatal("the task on a host wrote on this machine")
	}
	if res, err := d.Client.StopTask(context.Background(), started.ID, api.StopTaskInput{}); err != nil || res.Result != "stopped" {
		t.Fatalf("stop: %+v %v", res, err)
	}
	d.MustRun("task", "archive", started.ID)

	// Refused while tasks are on it, named in the error.
	r := d.Run("host", "remove", "lb")
	if r.Code == 0 || !strings.Contains(r.Stderr, parent.ID) || !strings.Contains(r.Stderr, child.ID) {
		t.Fatalf("host remove with tasks: exit %d, %s", r.Code, r.Stderr)
	}

	// The host down: check fails with ssh's own words.
	h.Stop()
	r = d.Run("host", "check", "lb")
	if r.Code == 0 || !strings.Contains(r.Stderr, "Connection refused") {
		t.Fatalf("host check of a stopped sshd: exit %d, stdout %s, stderr %s", r.Code, r.Stdout, r.Stderr)
	}
	// Started while the host is down, the run fails with ssh's words and
	// climbs (ADR 0007): to the operator, for a task they created.
	down := decodeJSON[core.Task](t, d.MustRun("task", "create", "host down", "--cwd", work, "--host", "lb",
		"--prompt", "hello", "--start", "--json"))
	var failed core.Task
	daemontest.Eventually(t, 60*time.Second, "the run on a host that is down to fail and climb", func() bool {
		failed = get(t, d, down.ID)
		return failed.Session != nil && failed.Session.State == core.SessionFailed && failed.Stalled != nil
	})
	if !strings.Contains(failed.Session.Error, "host lb unreachable") || !strings.Contains(failed.Session.Error, "Connection refused") {
		t.Fatalf("failed run's error: %q", failed.Session.Error)
	}
	h.Start()
	d.MustRun("host", "check", "lb")
	d.MustRun("task", "archive", down.ID)

	for _, id := range []string{child.ID, local.ID, parent.ID} {
		d.MustRun("task", "archive", id)
	}
	d.MustRun("host", "remove", "lb")
	if out := d.MustRun("host", "list", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("host list after remove: %s", out)
	}
	// ssh -O exit asks the master to go; it exits just after answering.
	mastersGone(t, d.Home.Dir, "after host remove")

	// A master the daemon started ends with the daemon.
	d.MustRun("host", "add", "lb2", "--ssh", h.Alias, "--dir", dir)
	d.MustRun("host", "check", "lb2")
	if m := sshMasters(d.Home.Dir); len(m) != 1 {
		t.Fatalf("ssh masters after check: %v, want 1", m)
	}
	d.Stop()
	mastersGone(t, d.Home.Dir, "after the daemon stopped")
	homeGone(t, d, "after the daemon stopped")
	if _, err := os.Stat(filepath.Join(d.Home.Dir, "ssh", "lb2.sock")); err == nil {
		t.Fatal("control socket left after the daemon stopped")
	}
}

// TestHostMasterAfterKill9: a daemon killed with -9 cannot end its ssh
// master; the next daemon of the home does, at its start.
func TestHostMasterAfterKill9(t *testing.T) {
	h := sshtest.Start(t)
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_SSH_CONFIG="+h.Config))
	d.MustRun("host", "add", "lb", "--ssh", h.Alias, "--dir", h.RemoteDir+"/kandev")
	d.MustRun("host", "check", "lb")
	if m := sshMasters(d.Home.Dir); len(m) != 1 {
		t.Fatalf("ssh masters after check: %v, want 1", m)
	}
	d.Kill9()
	if m := sshMasters(d.Home.Dir); len(m) != 1 {
		t.Fatalf("ssh masters after kill -9: %v, want the one left behind", m)
	}
	d.Restart()
	mastersGone(t, d.Home.Dir, "after the next start")
	d.MustRun("host", "check", "lb") // and a new one works
}

// procUIDs maps the live processes of a session (found by its marker in
// /proc: on the loopback host both sides are this machine's) to their uid.
func procUIDs(t *testing.T, sid string) map[int]int {
	t.Helper()
	out := map[int]int{}
	for _, pid := range agent.SessionProcs(sid) {
		var st syscall.Stat_t
		if err := syscall.Stat("/proc/"+strconv.Itoa(pid), &st); err == nil {
			out[pid] = int(st.Uid)
		}
	}
	return out
}

// TestHostRunsAgent runs a task's agent on the loopback host through the
// real binary: ACP over the ssh session, the agent's kandev mcp reaching
// the daemon through the forwarded unix socket (a question and a tool
// call), the file it writes in its worktree there shown by task diff in
// the main checkout, and a stop that leaves no process of the session on
// either side.
func TestHostRunsAgent(t *testing.T) {
	h := sshtest.Start(t)
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_SSH_CONFIG="+h.Config))
	dir := h.RemoteDir + "/kandev"
	d.MustRun("host", "add", "lb", "--ssh", h.Alias, "--dir", dir)
	repo := gitRepo(t)
	ctx := context.Background()

	task := create(t, d, api.CreateTaskInput{Title: "remote", CWD: repo, Host: "lb", Start: true, Prompt: strings.Join([]string{
		"mock: say hello",
		"mock: write remote.txt written on the host",
		"mock: call list_tasks_kandev {}",
		"mock: call ask_user_question_kandev " + askUserArgs("which colour?"),
		"mock: hang",
	}, "\n")})
	logTaskOnFailure(t, d, task.ID, func() { t.Logf("sshd log:\n%s", h.Log()) })
	waitSaid(t, d, task.ID, "hello")
	waitSaid(t, d, task.ID, "wrote remote.txt")
	waitSaid(t, d, task.ID, "result list_tasks_kandev")
	if !saidContains(t, d, task.ID, task.ID) {
		t.Fatalf("list_tasks_kandev over the forwarded socket did not list the task: %q", said(t, d, task.ID))
	}
	daemontest.Eventually(t, wait, "the agent's question over the forwarded socket", func() bool {
		for _, m := range conversation(t, d, task.ID) {
			if m.Kind == core.MsgQuestion && strings.Contains(m.Text, "which colour?") {
				return true
			}
		}
		return false
	})

	got := get(t, d, task.ID)
	if got.Session == nil || got.Workspace == nil {
		t.Fatalf("task on the host: %+v", got)
	}
	sid := got.Session.ID
	// The agent and its kandev mcp run as the remote account, marked.
	remote := 0
	for _, uid := range procUIDs(t, sid) {
		if uid == h.RemoteUID {
			remote++
		}
	}
	if remote < 2 {
		t.Fatalf("processes of the session as the remote user: %d (%v), want the agent and its kandev mcp", remote, procUIDs(t, sid))
	}
	// The file is in the worktree on the host, not in the local one yet.
	if _, err := os.Stat(filepath.Join(got.Workspace.Dir, "remote.txt")); err == nil {
		t.Fatal("the agent wrote in the local worktree")
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "worktrees", "*", "remote.txt")); len(m) != 1 {
		t.Fatalf("remote.txt in the worktrees on the host: %v", m)
	}
	// No TCP port: the MCP bridge reached the daemon through a unix
	// socket the forward made on the host.
	if m, _ := filepath.Glob(filepath.Join(dir, "run", sid+".sock")); len(m) != 1 {
		t.Fatalf("forwarded socket for the session on the host: %v", m)
	}

	// Review in the main checkout: diff fetches the host's worktree back.
	diff := d.MustRun("task", "diff", task.ID)
	if !strings.Contains(diff, "remote.txt") || !strings.Contains(diff, "+written on the host") {
		t.Fatalf("task diff:\n%s", diff)
	}
	if b, err := os.ReadFile(filepath.Join(got.Workspace.Dir, "remote.txt")); err != nil || string(b) != "written on the host\n" {
		t.Fatalf("local worktree after diff: %q %v", b, err)
	}
	// The snapshot left the host's worktree and index as they were.
	remoteWT := filepath.Dir(mustGlob1(t, filepath.Join(dir, "worktrees", "*", "remote.txt")))
	if out, err := h.Command("git", "-C", remoteWT, "status", "--porcelain").CombinedOutput(); err != nil ||
		strings.TrimSpace(string(out)) != "?? remote.txt" {
		t.Fatalf("the host's worktree after the fetch: %q %v", out, err)
	}

	res, err := d.Client.StopTask(ctx, task.ID, api.StopTaskInput{})
	if err != nil || res.Result != "stopped" {
		t.Fatalf("stop: %+v %v", res, err)
	}
	sessionGone(t, sid, "stop")
	// The teardown removes the session's socket on the host once its
	// processes are gone.
	daemontest.Eventually(t, wait, "the session's socket removed on the host", func() bool {
		m, _ := filepath.Glob(filepath.Join(dir, "run", sid+".sock"))
		return len(m) == 0
	})
	if left := procUIDs(t, sid); len(left) != 0 {
		t.Fatalf("processes of the session left: %v", left)
	}

	// The next run resumes the agent's session on the host, in the same
	// worktree there (the mock agent's state lives on the host too).
	message(t, d, task.ID, "mock: history")
	daemontest.Eventually(t, wait, "the resumed history", func() bool { return saidContains(t, d, task.ID, "history: ") })
	if !saidContains(t, d, task.ID, "history: session "+got.Session.AgentSessionID+" turn 2;") {
		t.Fatalf("not resumed on the host (agent session %s): %q", got.Session.AgentSessionID, said(t, d, task.ID))
	}
	// The turn over, the task goes back to the operator and the run ends.
	resumed := waitSettled(t, d, task.ID)
	if resumed.Session == nil || resumed.Session.ID == sid {
		t.Fatalf("no new run: %+v", resumed.Session)
	}
	sessionGone(t, resumed.Session.ID, "the second run's end")
	if m, _ := filepath.Glob(filepath.Join(dir, "worktrees", "*", "remote.txt")); len(m) != 1 {
		t.Fatalf("remote.txt in the worktrees on the host after the second run: %v", m)
	}

	// Merge in the main checkout, fetched from the host first.
	d.MustRun("task", "merge", task.ID)
	if b, err := os.ReadFile(filepath.Join(repo, "remote.txt")); err != nil || string(b) != "written on the host\n" {
		t.Fatalf("main checkout after merge: %q %v", b, err)
	}

	// A child inherits the parent's host and works in the same worktree
	// there; a child made to run here in that worktree fails at start,
	// saying why (a fetch from the host would replace its files).
	kid := create(t, d, api.CreateTaskInput{Title: "kid", ParentID: task.ID, Workspace: core.WorkspaceInherit, Start: true, Prompt: "mock: write kid.txt by the child"})
	if kid.Host != "lb" {
		t.Fatalf("child host %q", kid.Host)
	}
	waitSaid(t, d, kid.ID, "wrote kid.txt")
	if m, _ := filepath.Glob(filepath.Join(dir, "worktrees", "*", "kid.txt")); len(m) != 1 ||
		filepath.Dir(m[0]) != filepath.Dir(mustGlob1(t, filepath.Join(dir, "worktrees", "*", "remote.txt"))) {
		t.Fatalf("the child's file on the host: %v (child workspace %+v, parent %+v)", m, get(t, d, kid.ID).Workspace, get(t, d, task.ID).Workspace)
	}
	here := create(t, d, api.CreateTaskInput{Title: "here", ParentID: task.ID, Workspace: core.WorkspaceInherit, Host: "local", Start: true, Prompt: "mock: say here"})
	failed := waitState(t, d, here.ID, core.SessionFailed)
	if !strings.Contains(failed.Session.Error, "works in task "+task.ID+"'s worktree, which is on host lb") {
		t.Fatalf("a local child in a host's worktree: %q", failed.Session.Error)
	}

	// A daemon stop leaves nothing of a running session on the host.
	second := create(t, d, api.CreateTaskInput{Title: "second", CWD: repo, Host: "lb", Start: true,
		Prompt: "mock: say second\nmock: hang"})
	waitSaid(t, d, second.ID, "second")
	sid2 := get(t, d, second.ID).Session.ID
	if len(procUIDs(t, sid2)) == 0 {
		t.Fatal("the second session has no marked process")
	}
	d.Stop()
	sessionGone(t, sid2, "daemon stop")
	mastersGone(t, d.Home.Dir, "after the daemon stopped")
	homeGone(t, d, "after the daemon stopped")
}

func mustGlob1(t *testing.T, pattern string) string {
	t.Helper()
	m, _ := filepath.Glob(pattern)
	if len(m) != 1 {
		t.Fatalf("%s: %v, want one", pattern, m)
	}
	return m[0]
}

// TestHostSessionAfterKill9: a daemon killed with -9 cannot tear its host
// session down; the next daemon of the home, at its start, ends the
// session's processes on the host by marker (a helper the agent detached
// with setsid too, which its input's end would not end), then the local
// ssh (marked like a local agent) and the master, and resumes the cut
// turn on the host.
func TestHostSessionAfterKill9(t *testing.T) {
	h := sshtest.Start(t)
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_SSH_CONFIG="+h.Config))
	d.MustRun("host", "add", "lb", "--ssh", h.Alias, "--dir", h.RemoteDir+"/kandev")
	task := create(t, d, api.CreateTaskInput{Title: "remote", CWD: gitRepo(t), Host: "lb", Start: true,
		Prompt: "mock: say up\nmock: spawn-setsid\nmock: hang"})
	waitSaid(t, d, task.ID, "spawned: pid")
	sid := get(t, d, task.ID).Session.ID
	local, remote := 0, 0
	for _, uid := range procUIDs(t, sid) {
		if uid == h.RemoteUID {
			remote++
		} else {
			local++
		}
	}
	if local == 0 || remote == 0 {
		t.Fatalf("session processes: %d local, %d on the host; want both", local, remote)
	}
	d.Kill9()
	d.Restart()
	sessionGone(t, sid, "the next start after kill -9")
	// The host's part of the sweep did it (on the loopback host the local
	// sweep would see the host's processes too, so its log says who).
	if l := d.Log(); !strings.Contains(l, "killed processes an earlier daemon left on a host") {
		t.Fatalf("no sweep on the host in the daemon's log:\n%s", l)
	}
	// The cut turn resumes on the host, and a stop then leaves nothing.
	daemontest.Eventually(t, wait, "the cut prompt delivered again", func() bool {
		s := get(t, d, task.ID).Session
		return s != nil && s.ID != sid && s.State == core.SessionRunning
	})
	if _, err := d.Client.StopTask(context.Background(), task.ID, api.StopTaskInput{}); err != nil {
		t.Fatal(err)
	}
	d.Stop()
	homeGone(t, d, "after the daemon stopped")
	mastersGone(t, d.Home.Dir, "after the daemon stopped")
}
