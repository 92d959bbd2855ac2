package daemon_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	osuser "os/user"
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

// A container sandbox on a host (docs/hosts.md, "Sandboxes"; ADR 0062):
// the agent runs in a container of the host's engine, through the ssh
// session, as the remote account, with the view built from the host's
// paths. The test's own dockerd plays the host's engine: its socket is
// handed to the remote account and named by a docker context of that
// account, as an operator would set a host up.

// remoteDockerContext points the remote account's docker at host (a
// context, made through ssh as that account), undone when the test ends.
func remoteDockerContext(t *testing.T, h *sshtest.Host, host string) {
	t.Helper()
	name := "kandev-" + filepath.Base(h.RemoteDir)
	for _, args := range [][]string{
		{"docker", "context", "create", name, "--docker", "host=" + host},
		{"docker", "context", "use", name},
	} {
		if out, err := h.Command(args...).CombinedOutput(); err != nil {
			t.Fatalf("on the host, %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	t.Cleanup(func() {
		_ = h.Command("docker", "context", "use", "default").Run()
		_ = h.Command("docker", "context", "rm", "--force", name).Run()
	})
}

// shareDocker gives the remote account the dockerd's socket (and a way
// through its directory): on a real host, the account's docker group.
func shareDocker(t *testing.T, host string, uid int) {
	t.Helper()
	sock := strings.TrimPrefix(host, "unix://")
	if err := os.Chmod(filepath.Dir(sock), 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(sock, uid, -1); err != nil {
		t.Fatal(err)
	}
}

func TestHostSandboxDocker(t *testing.T) {
	host, _ := startDocker(t, true)
	e := engine{name: core.SandboxDocker, env: []string{"DOCKER_HOST=" + host}}
	h := sshtest.Start(t)
	bin := staticKandev(t)
	image := importImage(t, e, bin)
	testHostSandboxContainer(t, e, h, bin, image, func(d *daemontest.Daemon, repo string) {
		// An engine the remote account cannot reach fails the run, saying so.
		unreached := create(t, d, api.CreateTaskInput{Title: "unreached", Profile: "boxed", CWD: repo, Host: "lb", Start: true, Prompt: "mock: say never"})
		failedWith(t, d, unreached.ID, "sandbox docker on host lb: docker info fails as the remote account")
		shareDocker(t, host, h.RemoteUID)
		remoteDockerContext(t, h, host)
	})
}

// TestHostSandboxPodman: the remote account's own rootless podman (its
// storage in its home, as on a real host), the image imported there
// through ssh.
func TestHostSandboxPodman(t *testing.T) {
	if _, err := exec.LookPath("podman"); err != nil {
		unavailable(t, core.SandboxPodman, "podman is not installed")
	}
	h := sshtest.Start(t)
	endPausesStartedBy(t, sshtest.RemoteUser)
	e := engine{name: core.SandboxPodman, via: []string{"ssh", "-F", h.Config, h.Alias, "--"}}
	if out, err := e.command("info").CombinedOutput(); err != nil {
		unavailable(t, core.SandboxPodman, "rootless podman as "+sshtest.RemoteUser+": "+tail(string(out), 2000))
	}
	bin := staticKandev(t)
	image := importImage(t, e, bin)
	testHostSandboxContainer(t, e, h, bin, image, func(*daemontest.Daemon, string) {})
}

// failedWith waits for the run of task id to fail and climb, and checks
// its error says want.
func failedWith(t *testing.T, d *daemontest.Daemon, id, want string) {
	t.Helper()
	var got core.Task
	daemontest.Eventually(t, wait, "the run of "+id+" to fail and climb", func() bool {
		got = get(t, d, id)
		return got.Session != nil && got.Session.State == core.SessionFailed && got.Stalled != nil
	})
	if !strings.Contains(got.Session.Error, want) {
		t.Fatalf("failed run's error: %q, want %q", got.Session.Error, want)
	}
}

// testHostSandboxContainer runs a container task on the loopback host
// through engine e; ready makes the engine reachable by the remote
// account, after the daemon and the profile exist.
func testHostSandboxContainer(t *testing.T, e engine, h *sshtest.Host, bin, image string, ready func(*daemontest.Daemon, string)) {
	d := daemontest.Start(t, daemontest.WithBinary(bin), daemontest.WithEnv("KANDEV_SSH_CONFIG="+h.Config, "KANDEV_PERMISSION=allow"))
	leaveNoContainer(t, e)
	dir := h.RemoteDir + "/kandev"
	d.MustRun("host", "add", "lb", "--ssh", h.Alias, "--dir", dir)
	d.MustRun("profile", "add", "boxed", "--command", bin, "--arg", "mock-agent", "--sandbox", e.name, "--image", image, "--no-network")
	// host check says which engines the host has (the loopback host is
	// this machine).
	var chk api.HostCheck
	if err := json.Unmarshal([]byte(d.MustRun("host", "check", "lb", "--json")), &chk); err != nil {
		t.Fatal(err)
	}
	_, podmanErr := exec.LookPath("podman")
	if chk.Docker == "" || (chk.Podman != "") != (podmanErr == nil) {
		t.Fatalf("host check: docker %q podman %q (podman here: %v)", chk.Docker, chk.Podman, podmanErr)
	}
	repo := gitRepo(t)
	ctx := context.Background()
	ready(d, repo)

	// An image that is not on the host is never pulled.
	d.MustRun("profile", "add", "unbuilt", "--command", bin, "--arg", "mock-agent", "--sandbox", e.name, "--image", "kandev-never-built:1", "--no-network")
	missing := create(t, d, api.CreateTaskInput{Title: "no image", Profile: "unbuilt", CWD: repo, Host: "lb", Start: true, Prompt: "mock: say never"})
	failedWith(t, d, missing.ID, "sandbox "+e.name+" on host lb: image kandev-never-built:1 is not on the host (build or load it there; kandev never pulls)")

	pwnedDir := filepath.Join(dir, "state", "pwned")
	script := strings.Join([]string{
		"mock: say up",
		"mock: sh id -u",
		"mock: sh echo x > " + pwnedDir + " && echo wrote-dir",
		"mock: sh cat " + filepath.Join(h.RemoteDir, "authorized_keys"),
		"mock: sh echo written > by-sh.txt && echo wrote-worktree",
	}, "\n") + "\n" + call("list_tasks_kandev", map[string]any{}) + "\n" +
		call("create_task_kandev", map[string]any{"title": "escape", "sandbox": "bwrap", "start": false}) +
		"\nmock: say all finished\nmock: hang"
	task := create(t, d, api.CreateTaskInput{Title: "contained on the host", Profile: "boxed", CWD: repo, Host: "lb", Start: true, Prompt: script})
	logTaskOnFailure(t, d, task.ID, nil)
	if task.Sandbox != e.name || task.Host != "lb" {
		t.Fatalf("task sandbox %q host %q", task.Sandbox, task.Host)
	}
	waitSaid(t, d, task.ID, "all finished")
	out := shSaid(t, d, task.ID, 4)
	sid := get(t, d, task.ID).Session.ID
	if n := len(kandevContainers(t, e, sid)); n != 1 {
		t.Fatalf("%d containers of the session on the host's engine, want 1", n)
	}
	for _, want := range []string{
		"sh: " + strconv.Itoa(h.RemoteUID), // the remote account, not root
		"wrote-worktree",
		"result list_tasks_kandev", // kandev mcp through the forwarded socket
		"less confined than its parent task " + task.ID + "'s sandbox " + e.name,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the agent's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "wrote-dir") || strings.Contains(out, "ssh-ed25519") {
		t.Errorf("the agent reached what it must not:\n%s", out)
	}
	if _, err := os.Stat(pwnedDir); !os.IsNotExist(err) {
		t.Errorf("the contained agent wrote %s on the host: %v", pwnedDir, err)
	}
	if b, err := os.ReadFile(mustGlob1(t, filepath.Join(dir, "worktrees", "*", "by-sh.txt"))); err != nil || string(b) != "written\n" {
		t.Errorf("the agent's write in its worktree on the host: %q %v", b, err)
	}

	// A stop leaves no container and no process of the session.
	if res, err := d.Client.StopTask(ctx, task.ID, api.StopTaskInput{}); err != nil || res.Result != "stopped" {
		t.Fatalf("stop: %+v %v", res, err)
	}
	sessionGone(t, sid, "stop")
	noContainersLeft(t, e, "stop")

	// kill -9 of the daemon: the next one's host sweep removes the dead
	// session's container there.
	if _, err := d.Client.StartTask(ctx, task.ID, api.StartTaskInput{Prompt: "mock: say again\nmock: hang"}); err != nil {
		t.Fatal(err)
	}
	waitSaid(t, d, task.ID, "again")
	sid = get(t, d, task.ID).Session.ID
	d.Kill9()
	d.Restart()
	sessionGone(t, sid, "restart recovery")
	daemontest.Eventually(t, wait, "the dead session's container removed on the host", func() bool {
		return len(kandevContainers(t, e, sid)) == 0
	})
	// The cut turn resumes in a container of its own there (ADR 0026);
	// a stop takes that one too.
	var resumed *core.SessionInfo
	daemontest.Eventually(t, wait, "the cut turn resumed on the host", func() bool {
		resumed = get(t, d, task.ID).Session
		return resumed != nil && resumed.ID != sid && resumed.State == core.SessionRunning
	})
	if _, err := d.Client.StopTask(ctx, task.ID, api.StopTaskInput{}); err != nil {
		t.Fatal(err)
	}
	sessionGone(t, resumed.ID, "the last stop")
	noContainersLeft(t, e, "the last stop")

	d.Stop()
	homeGone(t, d, "after the daemon stopped")
	mastersGone(t, d.Home.Dir, "after the daemon stopped")
}

// endPausesStartedBy ends, when the test is over, the pause process
// rootless podman starts for user to hold its namespaces, if the test
// started it: it would outlive the test (and the CI run) otherwise. One
// that ran before the test is left alone.
func endPausesStartedBy(t *testing.T, user string) {
	t.Helper()
	u, err := osuser.Lookup(user)
	if err != nil {
		return
	}
	before := podmanPauses(u.Uid)
	t.Cleanup(func() {
		for pid := range podmanPauses(u.Uid) {
			if !before[pid] {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
}

// podmanPauses lists the pause processes of the user with uid.
func podmanPauses(uid string) map[int]bool {
	pids := map[int]bool{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		comm, err := os.ReadFile(dir + "/comm")
		if err != nil || strings.TrimSpace(string(comm)) != "podman pause" {
			continue
		}
		status, err := os.ReadFile(dir + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" && f[1] == uid {
				if pid, err := strconv.Atoi(filepath.Base(dir)); err == nil {
					pids[pid] = true
				}
			}
		}
	}
	return pids
}
