package daemon_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
	"github.com/kandev/kandev/internal/sshtest"
)

// homeProcs lists the live processes marked with the daemon's home: on the
// loopback host, both this machine's (the ssh clients) and the host's
// (the agent, its kandev mcp, what it spawned).
func homeProcs(d *daemontest.Daemon) []int {
	home := agent.HomeID(d.Home.Dir)
	var out []int
	for _, p := range agent.MarkedProcs() {
		if p.Home == home {
			out = append(out, p.PID)
		}
	}
	return out
}

func homeGone(t *testing.T, d *daemontest.Daemon, after string) {
	t.Helper()
	daemontest.Eventually(t, wait, "no process of the home left "+after, func() bool { return len(homeProcs(d)) == 0 })
}

// gate is a file the mock agent on the host waits for (mock: waitfile):
// the test opens it once it has cut the connection mid-turn.
func gate(t *testing.T, h *sshtest.Host, name string) string {
	t.Helper()
	p := filepath.Join(h.RemoteDir, name)
	_ = os.Remove(p)
	return p
}

func open(t *testing.T, p string) {
	t.Helper()
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func countSaid(t *testing.T, d *daemontest.Daemon, id, s string) int {
	n := 0
	for _, m := range said(t, d, id) {
		if m == s {
			n++
		}
	}
	return n
}

// TestHostConnectionLost cuts a task's ssh connection mid-turn, twice: the
// session's own ssh killed (the host still up: the reconnection is at
// once), then the host's sshd stopped (the task waits, showing the host
// unreachable, until it is back). Each time the session is interrupted,
// not failed, nothing climbs, the agent's session resumes on the host
// and the cut prompt is delivered again and completes; nothing of the
// daemon's home is left running on either side at the end.
func TestHostConnectionLost(t *testing.T) {
	h := sshtest.Start(t)
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_SSH_CONFIG="+h.Config))
	d.MustRun("host", "add", "lb", "--ssh", h.Alias, "--dir", h.RemoteDir+"/kandev")
	gateA := gate(t, h, "gate-a")
	task := create(t, d, api.CreateTaskInput{Title: "remote", CWD: gitRepo(t), Host: "lb", Start: true, Prompt: strings.Join([]string{
		"mock: say start a", "mock: waitfile " + gateA, "mock: history", "mock: say done a"}, "\n")})
	t.Cleanup(func() {
		if t.Failed() {
			got := get(t, d, task.ID)
			t.Logf("task: waiting %q interrupted %v session %+v stalled %+v", got.Waiting, got.Interrupted, got.Session, got.Stalled)
			for _, m := range conversation(t, d, task.ID) {
				t.Logf("%s: %s", m.Kind, m.Text)
			}
		}
	})
	waitSaid(t, d, task.ID, "start a")
	first := get(t, d, task.ID).Session
	// The session's pid is the local ssh carrying it, marked as the
	// session's.
	if first.PID <= 0 || !agent.HasSessionEnv(first.PID, first.ID) {
		t.Fatalf("session pid %d: not the session's local ssh", first.PID)
	}
	if b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(first.PID), "comm")); strings.TrimSpace(string(b)) != "ssh" {
		t.Fatalf("session pid %d is %q, want ssh", first.PID, b)
	}

	// 1. The session's ssh killed: interrupted, resumed at once, the cut
	// prompt delivered again (it says "start a" a second time, then waits
	// on the gate again).
	if err := syscall.Kill(first.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	daemontest.Eventually(t, wait, "the cut prompt delivered again", func() bool { return countSaid(t, d, task.ID, "start a") == 2 })
	if !noted(t, d, task.ID, "the connection was lost mid-turn") || noted(t, d, task.ID, "turn failed") {
		t.Fatal("the cut turn is not told as a lost connection, or failed")
	}
	open(t, gateA)
	waitSaid(t, d, task.ID, "done a")
	got := waitSettled(t, d, task.ID)
	// Returned to the operator as any turn's end is; not failed.
	if (got.Stalled != nil && got.Stalled.Failed) || got.Session.ID == first.ID {
		t.Fatalf("after the resumed turn: stalled %+v session %+v", got.Stalled, got.Session)
	}
	if !saidContains(t, d, task.ID, "history: session "+first.AgentSessionID+" ") {
		t.Fatalf("the agent session %s not resumed: %q", first.AgentSessionID, said(t, d, task.ID))
	}
	sessionGone(t, first.ID, "the lost session's end")
	sessionGone(t, got.Session.ID, "the resumed run's end")

	// 1b. The host's master connection killed: the session riding it ends
	// with ssh's own status; resumed the same way.
	gateM := gate(t, h, "gate-m")
	message(t, d, task.ID, strings.Join([]string{"mock: say start m", "mock: waitfile " + gateM, "mock: say done m"}, "\n"))
	waitSaid(t, d, task.ID, "start m")
	out, _ := exec.Command("pgrep", "-f", "ControlPath="+filepath.Join(d.Home.Dir, "ssh")+".*ControlMaster=yes").Output()
	masters := strings.Fields(string(out))
	if len(masters) != 1 {
		t.Fatalf("ssh masters: %v, want 1", masters)
	}
	pid, _ := strconv.Atoi(masters[0])
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	daemontest.Eventually(t, wait, "the prompt cut with the master delivered again", func() bool { return countSaid(t, d, task.ID, "start m") == 2 })
	open(t, gateM)
	waitSaid(t, d, task.ID, "done m")
	waitSettled(t, d, task.ID)

	// 2. The host's sshd stopped mid-turn: the master and the session go
	// with it; the task waits, showing since when the host is
	// unreachable, and resumes once it is back.
	gateB := gate(t, h, "gate-b")
	message(t, d, task.ID, strings.Join([]string{"mock: say start b", "mock: waitfile " + gateB, "mock: say done b"}, "\n"))
	waitSaid(t, d, task.ID, "start b")
	second := get(t, d, task.ID).Session
	h.Stop()
	var down core.Task
	daemontest.Eventually(t, wait, "the task to show the host unreachable", func() bool {
		down = get(t, d, task.ID)
		return strings.HasPrefix(down.Waiting, "host lb unreachable since ")
	})
	if down.WaitCause != core.WaitHostUnreachable {
		t.Errorf("wait cause %q, want %q", down.WaitCause, core.WaitHostUnreachable)
	}
	if !down.Interrupted || (down.Stalled != nil && down.Stalled.Failed) || down.Session == nil || down.Session.ID != second.ID ||
		down.Session.State != core.SessionCancelled {
		t.Fatalf("while the host is down: interrupted %v stalled %+v session %+v", down.Interrupted, down.Stalled, down.Session)
	}
	if out := d.MustRun("task", "show", task.ID); !strings.Contains(out, "host lb unreachable since") {
		t.Fatalf("task show while the host is down:\n%s", out)
	}
	h.Start()
	daemontest.Eventually(t, wait, "the cut prompt delivered again on the host", func() bool { return countSaid(t, d, task.ID, "start b") == 2 })
	open(t, gateB)
	waitSaid(t, d, task.ID, "done b")
	got = waitSettled(t, d, task.ID)
	if got.Waiting != "" || (got.Stalled != nil && got.Stalled.Failed) {
		t.Fatalf("after the host came back: waiting %q stalled %+v", got.Waiting, got.Stalled)
	}
	sessionGone(t, second.ID, "the session cut by the sshd's stop")

	// 3. The daemon restarted mid-turn: the session resumes on the host
	// and the cut prompt is delivered again there.
	gateC := gate(t, h, "gate-c")
	message(t, d, task.ID, strings.Join([]string{"mock: say start c", "mock: waitfile " + gateC, "mock: history", "mock: say done c"}, "\n"))
	waitSaid(t, d, task.ID, "start c")
	third := get(t, d, task.ID).Session
	d.Restart()
	sessionGone(t, third.ID, "the restart")
	daemontest.Eventually(t, wait, "the cut prompt delivered again after the restart", func() bool { return countSaid(t, d, task.ID, "start c") == 2 })
	open(t, gateC)
	waitSaid(t, d, task.ID, "done c")
	got = waitSettled(t, d, task.ID)
	if got.Session.ID == third.ID || got.Session.AgentSessionID != first.AgentSessionID {
		t.Fatalf("after the restart: session %+v, want a new run of agent session %s", got.Session, first.AgentSessionID)
	}
	if m, _ := filepath.Glob(filepath.Join(h.RemoteDir, "kandev", "worktrees", "*")); len(m) != 1 {
		t.Fatalf("worktrees on the host: %v, want the task's one", m)
	}

	// 4. While the host is down, a stop ends the task's wait for it, and
	// the daemon's stop ends another's: nothing is left on either side.
	gateD := gate(t, h, "gate-d")
	other := create(t, d, api.CreateTaskInput{Title: "other", CWD: gitRepo(t), Host: "lb", Start: true, Prompt: "mock: say start e\nmock: waitfile " + gateD})
	message(t, d, task.ID, "mock: say start d\nmock: waitfile "+gateD)
	waitSaid(t, d, task.ID, "start d")
	waitSaid(t, d, other.ID, "start e")
	h.Stop()
	for _, id := range []string{task.ID, other.ID} {
		daemontest.Eventually(t, wait, "task "+id+" to show the host unreachable", func() bool {
			return strings.HasPrefix(get(t, d, id).Waiting, "host lb unreachable since ")
		})
	}
	if res, err := d.Client.StopTask(context.Background(), task.ID, api.StopTaskInput{}); err != nil {
		t.Fatalf("stop while the host is down: %+v %v", res, err)
	}
	daemontest.Eventually(t, wait, "the stopped task to wait no more", func() bool {
		got := get(t, d, task.ID)
		return got.Halted && got.Waiting == ""
	})
	d.Stop()
	homeGone(t, d, "after the daemon stopped")
	mastersGone(t, d.Home.Dir, "after the daemon stopped")
}

// noted says whether a status note of the task contains sub.
func noted(t *testing.T, d *daemontest.Daemon, id, sub string) bool {
	t.Helper()
	for _, m := range conversation(t, d, id) {
		if m.Kind == core.MsgStatus && strings.Contains(m.Text, sub) {
			return true
		}
	}
	return false
}

// hostGit runs git on the host (as the remote user) in dir.
func hostGit(t *testing.T, h *sshtest.Host, dir string, args ...string) string {
	t.Helper()
	out, err := h.Command(append([]string{"git", "-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v on the host: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestHostWorktreeEnds: a merge in the main checkout moves the host's
// branch onto the merged commit (so the next run there continues from
// it), and the host's worktree goes when the local one does: on discard
// and on the archive of a done task (its work fetched back first and
// kept on its branch here).
func TestHostWorktreeEnds(t *testing.T) {
	h := sshtest.Start(t)
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_SSH_CONFIG="+h.Config))
	dir := h.RemoteDir + "/kandev"
	d.MustRun("host", "add", "lb", "--ssh", h.Alias, "--dir", dir)
	repo := gitRepo(t)
	ctx := context.Background()
	hostWT := func(task core.Task) string {
		return filepath.Join(dir, "worktrees", hostHash(get(t, d, task.ID).Workspace.Dir))
	}

	// Merge, then a second run on the host: it starts from the merged
	// commit, and the second merge brings only the new work.
	task := create(t, d, api.CreateTaskInput{Title: "merge", CWD: repo, Host: "lb", Start: true, Prompt: "mock: write a.txt one"})
	waitSaid(t, d, task.ID, "wrote a.txt")
	waitSettled(t, d, task.ID)
	d.MustRun("task", "merge", task.ID)
	wt := hostWT(task)
	local := get(t, d, task.ID).Workspace
	if st := hostGit(t, h, wt, "status", "--porcelain"); st != "" {
		t.Fatalf("the host's worktree after the merge: %q, want clean at the merged commit", st)
	}
	head, err := exec.Command("git", "-C", local.Dir, "rev-parse", "HEAD").Output()
	if err != nil || hostGit(t, h, wt, "rev-parse", "HEAD") != strings.TrimSpace(string(head)) {
		t.Fatalf("the host's head is not the merged commit %s (%v)", head, err)
	}
	message(t, d, task.ID, "mock: write b.txt two")
	waitSaid(t, d, task.ID, "wrote b.txt")
	waitSettled(t, d, task.ID)
	diff := d.MustRun("task", "diff", task.ID)
	if !strings.Contains(diff, "+two") {
		t.Fatalf("the second diff:\n%s", diff)
	}
	d.MustRun("task", "merge", task.ID)
	if b, err := os.ReadFile(filepath.Join(repo, "b.txt")); err != nil || string(b) != "two\n" {
		t.Fatalf("main checkout after the second merge: %q %v", b, err)
	}

	// Discard: the host's worktree and branch go with the local ones.
	gone := create(t, d, api.CreateTaskInput{Title: "discard", CWD: repo, Host: "lb", Start: true, Prompt: "mock: write c.txt three"})
	waitSaid(t, d, gone.ID, "wrote c.txt")
	waitSettled(t, d, gone.ID)
	gwt, branch := hostWT(gone), get(t, d, gone.ID).Workspace.Branch
	if _, err := os.Stat(filepath.Join(gwt, "c.txt")); err != nil {
		t.Fatalf("the discarded task's file on the host: %v", err)
	}
	d.MustRun("task", "discard", gone.ID, "--yes")
	if _, err := os.Stat(gwt); err == nil {
		t.Fatal("the host's worktree is left after the discard")
	}
	hostRepo := filepath.Dir(mustGlob1(t, filepath.Join(dir, "repos", "*.git", "HEAD")))
	if out, _ := h.Command("git", "--git-dir="+hostRepo, "branch", "--list", branch).CombinedOutput(); strings.TrimSpace(string(out)) != "" {
		t.Fatalf("the discarded branch %s is left on the host: %s", branch, out)
	}

	// Archived done: the host's work is fetched back, committed on the
	// branch here, and the host's worktree removed.
	done := create(t, d, api.CreateTaskInput{Title: "done", CWD: repo, Host: "lb", Start: true, Prompt: "mock: write d.txt four"})
	waitSaid(t, d, done.ID, "wrote d.txt")
	waitSettled(t, d, done.ID)
	dwt, dbranch := hostWT(done), get(t, d, done.ID).Workspace.Branch
	if _, err := d.Client.SetTaskStatus(ctx, done.ID, core.StatusDone); err != nil {
		t.Fatal(err)
	}
	d.MustRun("task", "archive", done.ID)
	if _, err := os.Stat(dwt); err == nil {
		t.Fatal("the host's worktree is left after the archive of a done task")
	}
	if out, err := exec.Command("git", "-C", repo, "show", dbranch+":d.txt").Output(); err != nil || string(out) != "four\n" {
		t.Fatalf("the host's work on branch %s here: %q %v", dbranch, out, err)
	}
	d.Stop()
	homeGone(t, d, "after the daemon stopped")
	mastersGone(t, d.Home.Dir, "after the daemon stopped")
}

// hostHash is hosts.WorktreePath's name for a local worktree.
func hostHash(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return hex.EncodeToString(sum[:8])
}
