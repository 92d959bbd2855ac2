package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/kandev/kandev/core/doctor"
	"github.com/kandev/kandev/internal/dockertest"
)

// Confined agents in containers (issue 25), through docker and podman
// alike: the image is built offline (an import of a root file system
// holding a shell and a static kandev), nothing is pulled, containers have
// no network, and no container is left behind.

// engine is a container engine the tests run confined agents through: its
// CLI (the sandbox mode's name) and the environment that points that CLI
// at this test's own instance.
type engine struct {
	name string
	env  []string
	// kill is the engine dying mid-turn (SIGKILL), for an engine of the
	// test's own.
	kill func()
	// via runs the CLI elsewhere (ssh to a host's account), when set.
	via []string
}

func (e engine) command(args ...string) *exec.Cmd {
	cmd := exec.Command(e.name, args...)
	if len(e.via) > 0 {
		cmd = exec.Command(e.via[0], append(append(e.via[1:], e.name), args...)...)
	}
	cmd.Env = append(os.Environ(), e.env...)
	return cmd
}

// must runs the engine's CLI and returns its trimmed output.
func (e engine) must(t testing.TB, args ...string) string {
	t.Helper()
	out, err := e.command(args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v %s", e.name, args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// engines are the container engines the container tests run under, each
// as a subtest.
var engines = []string{core.SandboxDocker, core.SandboxPodman}

// podmanInCI says .ci/run installs podman, so its tests must run there.
const podmanInCI = true

// engineRequired says a missing engine fails the test rather than skips
// it: docker in CI (.ci/run installs it), podman when asked for.
func engineRequired(name string) bool {
	if name == core.SandboxPodman {
		return os.Getenv("KANDEV_TEST_PODMAN") == "1" || (podmanInCI && os.Getenv("CI") != "")
	}
	return os.Getenv("CI") != ""
}

// unavailable skips a test whose engine cannot run here, or fails it
// where the engine is required.
func unavailable(t testing.TB, name, why string) {
	t.Helper()
	if engineRequired(name) {
		t.Fatalf("%s is required here and cannot run: %s", name, why)
	}
	t.Skipf("%s: %s", name, why)
}

// startEngine returns an engine that answers: docker's (the caller's
// DOCKER_HOST, the system's, else a dockerd of the test's own) or a
// rootful podman with its own storage and configuration. With own, docker
// is always one of the test's own, so it can be killed.
func startEngine(t testing.TB, name string, own bool) engine {
	t.Helper()
	if name == core.SandboxPodman {
		if !podmanInCI && !engineRequired(name) {
			t.Skip("podman: set KANDEV_TEST_PODMAN=1 to run the container tests under podman")
		}
		return startPodman(t)
	}
	host, kill := startDocker(t, own)
	return engine{name: name, env: []string{"DOCKER_HOST=" + host}, kill: kill}
}

// startDocker returns a DOCKER_HOST that answers: the caller's, else a
// dockerd started here (no bridge, no iptables, its own data and exec
// roots), stopped when the test ends. With own it always starts a dockerd
// of its own and also returns how to kill it (SIGKILL: the engine dying).
func startDocker(t testing.TB, own bool) (string, func()) {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		unavailable(t, core.SandboxDocker, "docker is not installed")
	}
	if h := os.Getenv("DOCKER_HOST"); !own && h != "" && dockertest.Answers(h) {
		return h, nil
	}
	if !own && dockertest.Answers("unix:///var/run/docker.sock") {
		return "unix:///var/run/docker.sock", nil
	}
	d, err := dockertest.Start("")
	if errors.Is(err, dockertest.ErrUnavailable) {
		unavailable(t, core.SandboxDocker, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	return d.Host, d.Kill
}

// rlimitNproc is RLIMIT_NPROC on Linux (syscall names only some limits).
const rlimitNproc = 6

// startPodman is a rootful podman whose storage, run state, locks and
// events all live in a directory of the test's own (CONTAINERS_CONF and
// CONTAINERS_STORAGE_CONF, which the daemon passes to the podman it runs),
// removed when the test ends. Its kill is SIGKILL of every podman and
// conmon process of that instance: a daemonless engine dying.
func startPodman(t testing.TB) engine {
	t.Helper()
	if _, err := exec.LookPath("podman"); err != nil {
		unavailable(t, core.SandboxPodman, "podman is not installed")
	}
	if os.Geteuid() != 0 {
		unavailable(t, core.SandboxPodman, "only rootful podman is tested (not root)")
	}
	dir, err := os.MkdirTemp("", "kdpm-")
	if err != nil {
		t.Fatal(err)
	}
	// Rootful podman sets the container's open files and processes to
	// 1048576 unless configured, which a root without CAP_SYS_RESOURCE
	// (CI inside a container) cannot grant: runc fails "error setting
	// rlimits". The test's own limits are always grantable.
	var nofile, nproc syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Getrlimit(rlimitNproc, &nproc); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		// podman lowers its own process limit to pid_max.
		if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && n < nproc.Max {
			nproc.Max = n
		}
	}
	storage, conf := filepath.Join(dir, "storage.conf"), filepath.Join(dir, "containers.conf")
	files := map[string]string{
		storage: fmt.Sprintf("[storage]\ndriver = \"overlay\"\ngraphroot = %q\nrunroot = %q\n",
			filepath.Join(dir, "graph"), filepath.Join(dir, "run")),
		conf: fmt.Sprintf("[containers]\ndefault_ulimits = [\"nofile=%d:%d\", \"nproc=%d:%d\"]\n\n"+
			"[engine]\ntmp_dir = %q\nlock_type = \"file\"\nevents_logger = \"file\"\nevents_logfile_path = %q\ncgroup_manager = \"cgroupfs\"\n",
			nofile.Max, nofile.Max, nproc.Max, nproc.Max, filepath.Join(dir, "tmp"), filepath.Join(dir, "events.log")),
	}
	for path, text := range files {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := engine{name: core.SandboxPodman, env: []string{"CONTAINERS_STORAGE_CONF=" + storage, "CONTAINERS_CONF=" + conf}}
	e.kill = func() {
		for _, pid := range procsOf(dir, "podman", "conmon") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	t.Cleanup(func() {
		_ = e.command("rm", "--all", "--force").Run()
		_ = e.command("rmi", "--all", "--force").Run()
		dockertest.KillUnder(dir)
		dockertest.UnmountUnder(dir)
		os.RemoveAll(dir)
	})
	if out, err := e.command("info", "--format", "{{.Store.GraphRoot}}").CombinedOutput(); err != nil {
		unavailable(t, core.SandboxPodman, fmt.Sprintf("podman info: %v %s", err, out))
	}
	return e
}

// procsOf are the processes named one of names whose command line or
// environment names dir.
func procsOf(dir string, names ...string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		comm, _ := os.ReadFile("/proc/" + ent.Name() + "/comm")
		named := false
		for _, n := range names {
			named = named || strings.TrimSpace(string(comm)) == n
		}
		if !named {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + ent.Name() + "/cmdline")
		environ, _ := os.ReadFile("/proc/" + ent.Name() + "/environ")
		if bytes.Contains(cmdline, []byte(dir)) || bytes.Contains(environ, []byte(dir)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// staticKandev builds kandev without cgo, so it runs in an image with no
// libc: the daemon under test runs from it, and its mock agent is the
// same file mounted into the container.
func staticKandev(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "kandev")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/kandev")
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("static build: %v\n%s", err, out)
	}
	return bin
}

// importImage makes an image offline: a root file system with the static
// kandev, /bin/sh and the few tools the tests' commands use (each with
// the libraries it links), imported, never pulled.
func importImage(t testing.TB, e engine, kandev string) string {
	t.Helper()
	root := t.TempDir()
	copyFile := func(src string) {
		dst := filepath.Join(root, src)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tool := range []string{"sh", "cat", "ls", "echo", "kill", "id", "rm"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			continue
		}
		real, _ := filepath.EvalSymlinks(p)
		copyFile(real)
		if real != "/bin/"+tool {
			if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err == nil {
				_ = os.Symlink(real, filepath.Join(root, "bin", tool))
			}
		}
		out, _ := exec.Command("ldd", real).Output()
		for _, f := range strings.Fields(string(out)) {
			if strings.HasPrefix(f, "/") {
				if r, err := filepath.EvalSymlinks(f); err == nil {
					copyFile(r)
					if r != f {
						_ = os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755)
						_ = os.Symlink(r, filepath.Join(root, f))
					}
				}
			}
		}
	}
	b, err := os.ReadFile(kandev)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "usr/local/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "usr/local/bin/kandev"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"tmp", "proc", "dev", "etc"} {
		_ = os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	image := fmt.Sprintf("kandev-test-agent:%d", time.Now().UnixNano())
	tarCmd := exec.Command("tar", "-C", root, "-c", ".")
	imp := e.command("import", "-", image)
	pipe, err := tarCmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	imp.Stdin = pipe
	var stderr bytes.Buffer
	imp.Stderr = &stderr
	if err := tarCmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := imp.Run(); err != nil {
		t.Fatalf("%s import: %v %s", e.name, err, stderr.String())
	}
	_ = tarCmd.Wait()
	t.Cleanup(func() {
		_ = e.command("rmi", "--force", image).Run()
	})
	return image
}

// kandevContainers lists the containers labelled with a kandev session
// (with that session, if one is given).
func kandevContainers(t *testing.T, e engine, session ...string) []string {
	t.Helper()
	label := "label=kandev.session"
	if len(session) > 0 {
		label += "=" + session[0]
	}
	out, err := e.command("ps", "--all", "--quiet", "--filter", label).Output()
	if err != nil {
		t.Fatalf("%s ps: %v", e.name, err)
	}
	return strings.Fields(string(out))
}

func noContainersLeft(t *testing.T, e engine, after string) {
	t.Helper()
	daemontest.Eventually(t, wait, "no kandev container left after "+after, func() bool {
		return len(kandevContainers(t, e)) == 0
	})
}

// leaveNoContainer fails the test, at its end, if a kandev container is
// left, and removes it.
func leaveNoContainer(t *testing.T, e engine) {
	t.Cleanup(func() {
		if left := kandevContainers(t, e); len(left) > 0 {
			t.Errorf("containers left behind: %v", left)
			_ = e.command(append([]string{"rm", "--force"}, left...)...).Run()
		}
	})
}

func TestContainerConfinesTheAgent(t *testing.T) {
	for _, name := range engines {
		t.Run(name, func(t *testing.T) { testContainerConfinesTheAgent(t, name) })
	}
}

func TestContainerEngineDiesMidTurn(t *testing.T) {
	for _, name := range engines {
		t.Run(name, func(t *testing.T) { testContainerEngineDiesMidTurn(t, name) })
	}
}

func TestContainerKeepsTheRules(t *testing.T) {
	for _, name := range engines {
		t.Run(name, func(t *testing.T) { testContainerKeepsTheRules(t, name) })
	}
}

func testContainerConfinesTheAgent(t *testing.T, name string) {
	e := startEngine(t, name, false)
	bin := staticKandev(t)
	image := importImage(t, e, bin)
	root, err := os.MkdirTemp("", "kddock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	home := filepath.Join(root, "home")
	secret := filepath.Join(home, ".ssh", "id_ed25519")
	work := filepath.Join(root, "work")
	for _, dir := range []string{filepath.Dir(secret), work} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(secret, []byte("operator's key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, daemontest.WithBinary(bin), daemontest.WithEnv(append([]string{"HOME=" + home, "KANDEV_PERMISSION=allow"}, e.env...)...))
	leaveNoContainer(t, e)
	d.MustRun("profile", "add", "boxed", "--command", bin, "--arg", "mock-agent", "--sandbox", e.name, "--image", image, "--no-network")
	// A container's HOME is the task's private home too: a profile that
	// sets one is refused, not silently overridden (issue 36).
	if r := d.Run("profile", "add", "homed", "--command", bin, "--arg", "mock-agent", "--sandbox", e.name, "--image", image, "--env", "HOME=/elsewhere"); r.Code == 0 ||
		!strings.Contains(r.Stderr, "a confined agent's HOME is its task's private home") {
		t.Fatalf("profile add with HOME under %s: exit %d\n%s", e.name, r.Code, r.Stderr)
	}
	doctorStartsInside(t, d, e, bin, image)
	forwardReachesTheHost(t, d, e, bin, image)
	ctx := context.Background()

	other := create(t, d, api.CreateTaskInput{Title: "neighbour", CWD: work, Start: true, Prompt: "mock: say up\nmock: hang"})
	waitSaid(t, d, other.ID, "up")
	otherPID := get(t, d, other.ID).Session.PID

	script := strings.Join([]string{
		"mock: sh cat " + secret,
		"mock: sh echo x > " + filepath.Join(root, "outside.txt"),
		"mock: sh ls " + d.Home.Dir,
		"mock: sh cat /proc/" + strconv.Itoa(otherPID) + "/environ",
		"mock: sh kill -0 " + strconv.Itoa(d.PID()),
		"mock: sh echo written > by-sh.txt && echo ok",
	}, "\n") + "\n" + call("create_task_kandev", map[string]any{"title": "escape", "sandbox": "bwrap", "start": false}) + "\n" +
		call("get_task_kandev", map[string]any{}) + "\nmock: say all finished\nmock: hang"
	task := create(t, d, api.CreateTaskInput{Title: "boxed", Profile: "boxed", CWD: work, Start: true, Prompt: script})
	if task.Sandbox != e.name {
		t.Fatalf("sandbox %q, want the profile's %s", task.Sandbox, e.name)
	}
	waitSaid(t, d, task.ID, "all finished")
	out := shSaid(t, d, task.ID, 6)
	for _, want := range []string{"No such file or directory", "less confined than its parent task " + task.ID + "'s sandbox " + e.name, `"sandbox":"` + e.name + `"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the agent's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "operator's key") || strings.Contains(out, "kandev.sock") || strings.Contains(out, "KANDEV_TOKEN") {
		t.Errorf("the agent reached what it must not:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(root, "outside.txt")); !os.IsNotExist(err) {
		t.Errorf("the agent wrote outside its worktree: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(work, "by-sh.txt")); err != nil || string(b) != "written\n" {
		t.Errorf("the agent's write in its directory: %q %v", b, err)
	}
	sid := get(t, d, task.ID).Session.ID
	if n := len(kandevContainers(t, e)); n != 1 {
		t.Fatalf("%d kandev containers while the session runs, want 1", n)
	}
	if n := len(agent.SessionProcs(sid)); n == 0 {
		t.Fatal("the container's processes do not carry the session's marker on the host")
	}
	res, err := d.Client.StopTask(ctx, task.ID, api.StopTaskInput{})
	if err != nil || res.Result != "stopped" {
		t.Fatalf("stop: %+v %v", res, err)
	}
	if res, err = d.Client.StopTask(ctx, task.ID, api.StopTaskInput{}); err != nil || res.Result != "not_running" {
		t.Fatalf("second stop: %+v %v", res, err)
	}
	sessionGone(t, sid, "stop")
	noContainersLeft(t, e, "stop")

	// kill -9 of the daemon: the next one leaves no process and no container.
	if _, err := d.Client.StartTask(ctx, task.ID, api.StartTaskInput{Prompt: "mock: say again\nmock: hang"}); err != nil {
		t.Fatal(err)
	}
	waitSaid(t, d, task.ID, "again")
	sid = get(t, d, task.ID).Session.ID
	d.Kill9()
	d.Restart()
	sessionGone(t, sid, "restart recovery")
	daemontest.Eventually(t, wait, "the dead session's container removed", func() bool {
		return len(kandevContainers(t, e, sid)) == 0
	})
	// The cut turn resumes in a container of its own (ADR 0026); a stop
	// takes that one too.
	waitState(t, d, task.ID, core.SessionRunning)
	if _, err := d.Client.StopTask(ctx, task.ID, api.StopTaskInput{}); err != nil {
		t.Fatal(err)
	}
	noContainersLeft(t, e, "the last stop")
	if _, err := d.Client.StopTask(ctx, other.ID, api.StopTaskInput{}); err != nil {
		t.Fatal(err)
	}

	// The startup sweep: a container of an ended session of this home is
	// removed; one of a session this home does not know is left alone.
	e.must(t, "create", "--label", "kandev.session="+sid, image, "/bin/sh")
	foreign := e.must(t, "create", "--label", "kandev.session=sforeign", image, "/bin/sh")
	t.Cleanup(func() { _ = e.command("rm", "--force", foreign).Run() })
	d.Stop()
	d.Restart()
	daemontest.Eventually(t, wait, "the sweep to remove the ended session's container", func() bool {
		return len(kandevContainers(t, e, sid)) == 0
	})
	if n := len(kandevContainers(t, e, "sforeign")); n != 1 {
		t.Fatalf("the sweep removed another home's container (%d left)", n)
	}
	e.must(t, "rm", "--force", foreign)

	// An image that is not there is never pulled: the run fails, and
	// climbs as every failed run does, with the engine's reason.
	d.MustRun("profile", "add", "unbuilt", "--command", bin, "--arg", "mock-agent", "--sandbox", e.name, "--image", "kandev-never-built:1", "--no-network")
	missing := create(t, d, api.CreateTaskInput{Title: "no image", Profile: "unbuilt", CWD: work, Start: true, Prompt: "mock: say never"})
	got := waitState(t, d, missing.ID, core.SessionFailed)
	if got.Stalled == nil || !got.Stalled.Failed || !strings.Contains(strings.ToLower(got.Session.Error+got.Stalled.Detail), "kandev-never-built") {
		t.Fatalf("a missing image: session %+v stalled %+v", got.Session, got.Stalled)
	}
	noContainersLeft(t, e, "a missing image")
}

// The container engine dies mid-turn: the run fails and climbs (ADR
// 0007), and nothing of the session is left on the host.
func testContainerEngineDiesMidTurn(t *testing.T, name string) {
	e := startEngine(t, name, true)
	bin := staticKandev(t)
	image := importImage(t, e, bin)
	work := t.TempDir()
	d := daemontest.Start(t, daemontest.WithBinary(bin), daemontest.WithEnv(append([]string{"KANDEV_PERMISSION=allow"}, e.env...)...))
	d.MustRun("profile", "add", "boxed", "--command", bin, "--arg", "mock-agent", "--sandbox", e.name, "--image", image, "--no-network")
	task := create(t, d, api.CreateTaskInput{Title: "boxed", Profile: "boxed", CWD: work, Start: true, Prompt: "mock: say up\nmock: hang"})
	waitSaid(t, d, task.ID, "up")
	sid := get(t, d, task.ID).Session.ID
	e.kill()
	got := waitState(t, d, task.ID, core.SessionFailed)
	if got.Stalled == nil || !got.Stalled.Failed {
		t.Fatalf("the engine's death: session %+v stalled %+v", got.Session, got.Stalled)
	}
	sessionGone(t, sid, "the container engine's death")
	if e.name == core.SandboxPodman {
		// Podman has no daemon: the store outlives its killed processes,
		// and the session's teardown removes the container from it.
		noContainersLeft(t, e, "the engine's death")
	}
}

// In a container, a task in a git repository works in its worktree (what
// it writes is its diff) and interrupt, a question and a daemon restart
// with resume behave as on the host; no container is left.
func testContainerKeepsTheRules(t *testing.T, name string) {
	e := startEngine(t, name, false)
	bin := staticKandev(t)
	image := importImage(t, e, bin)
	repo := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	gitRun(t, repo, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(repo, "f.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, repo, "add", ".")
	gitRun(t, repo, "commit", "-q", "-m", "initial")
	d := daemontest.Start(t, daemontest.WithBinary(bin), daemontest.WithEnv(append([]string{"KANDEV_PERMISSION=allow"}, e.env...)...))
	leaveNoContainer(t, e)
	d.MustRun("profile", "add", "boxed", "--command", bin, "--arg", "mock-agent", "--sandbox", e.name, "--image", image, "--no-network")
	// A container's HOME is the task's private home too: a profile that
	// sets one is refused, not silently overridden (issue 36).
	if r := d.Run("profile", "add", "homed", "--command", bin, "--arg", "mock-agent", "--sandbox", e.name, "--image", image, "--env", "HOME=/elsewhere"); r.Code == 0 ||
		!strings.Contains(r.Stderr, "a confined agent's HOME is its task's private home") {
		t.Fatalf("profile add with HOME under %s: exit %d\n%s", e.name, r.Code, r.Stderr)
	}
	doctorStartsInside(t, d, e, bin, image)
	forwardReachesTheHost(t, d, e, bin, image)
	ctx := context.Background()
	box := func(title, prompt string) core.Task {
		return create(t, d, api.CreateTaskInput{Title: title, Profile: "boxed", CWD: repo, Start: true, Prompt: prompt})
	}

	work := box("work", "mock: write inside.txt from the container\nmock: say busy\nmock: hang")
	waitSaid(t, d, work.ID, "busy")
	diff, err := d.Client.TaskDiff(ctx, work.ID, api.DiffInput{})
	if err != nil || len(diff.Files) != 1 || diff.Files[0].Path != "inside.txt" {
		t.Fatalf("diff %+v %v", diff.Files, err)
	}
	if _, err := d.Client.MessageTask(ctx, work.ID, api.MessageInput{Text: "mock: say switched", Delivery: api.DeliveryInterrupt}); err != nil {
		t.Fatal(err)
	}
	waitSaid(t, d, work.ID, "switched")

	asks := box("asks", call("ask_user_question_kandev", map[string]any{
		"questions": []map[string]any{{"prompt": "Which DB?", "options": []map[string]any{{"label": "sqlite"}, {"label": "postgres"}}}},
	}))
	q := waitQuestion(t, d, asks.ID)
	d.MustRun("task", "answer", asks.ID, "--option", "1")
	daemontest.Eventually(t, wait, "the answer", func() bool {
		for _, p := range prompts(conversation(t, d, asks.ID)) {
			if strings.Contains(p, "answered your question "+q.ID) {
				return true
			}
		}
		return saidContains(t, d, asks.ID, "sqlite")
	})

	waitSettled(t, d, work.ID)
	d.Stop()
	noContainersLeft(t, e, "shutdown")
	d.Restart()
	message(t, d, work.ID, "mock: history")
	daemontest.Eventually(t, wait, "the resumed history", func() bool { return saidContains(t, d, work.ID, "history: ") })
	if !saidContains(t, d, work.ID, " turn 3; earlier: ") {
		t.Fatalf("not resumed: %q", said(t, d, work.ID))
	}
	for _, id := range []string{work.ID, asks.ID} {
		if _, err := d.Client.StopTask(ctx, id, api.StopTaskInput{}); err != nil {
			t.Fatal(err)
		}
	}
	noContainersLeft(t, e, "the stops")
}

// doctorStartsInside: kandev doctor starts the agent in the profile's
// container (issue 36) and leaves no container behind; an agent that
// cannot start there is named with the line that says why.
func doctorStartsInside(t *testing.T, d *daemontest.Daemon, e engine, bin, image string) {
	t.Helper()
	d.MustRun("profile", "add", "broken", "--command", bin, "--arg", "no-such-command", "--sandbox", e.name, "--image", image, "--no-network")
	defer d.MustRun("profile", "remove", "broken")
	var r doctor.Report
	res := d.Run("doctor", "--json")
	if err := json.Unmarshal([]byte(res.Stdout), &r); err != nil {
		t.Fatalf("doctor --json: %v\n%s\n%s", err, res.Stdout, res.Stderr)
	}
	seen := 0
	for _, p := range r.ProfileSandboxes {
		switch p.Profile {
		case "boxed":
			seen++
			if !p.CanStart || p.Agent == nil || p.Agent.AgentName == "" {
				t.Errorf("boxed in %s: %+v", e.name, p)
			}
		case "broken":
			seen++
			if p.CanStart || !strings.Contains(p.Why, "unknown command") {
				t.Errorf("broken in %s: %+v", e.name, p)
			}
			os.Remove(p.Log)
		}
	}
	if seen != 2 {
		t.Fatalf("doctor's profile sandboxes: %+v", r.ProfileSandboxes)
	}
	noContainersLeft(t, e, "doctor")
}

// forwardReachesTheHost: a container with no network reaches the host
// loopback port its profile forwards, and no other (issue 36, ADR 0074);
// the forward's socket goes with the run.
func forwardReachesTheHost(t *testing.T, d *daemontest.Daemon, e engine, bin, image string) {
	t.Helper()
	model, other := loopbackServer(t, "model here"), loopbackServer(t, "not for you")
	d.MustRun("profile", "add", "local", "--command", bin, "--arg", "mock-agent", "--sandbox", e.name, "--image", image,
		"--network", "none", "--forward", strconv.Itoa(model.port))
	defer d.MustRun("profile", "remove", "local")
	task := create(t, d, api.CreateTaskInput{Title: "local model", Profile: "local", CWD: t.TempDir(), Start: true,
		Prompt: "mock: fetch " + model.url + "/v1/models\nmock: fetch " + other.url + "/\nmock: say done"})
	logTaskOnFailure(t, d, task.ID, nil)
	waitSaid(t, d, task.ID, "done")
	words := strings.Join(said(t, d, task.ID), "\n")
	if !strings.Contains(words, "fetched "+model.url+"/v1/models: 200 model here /v1/models") {
		t.Fatalf("%s: the forwarded port did not answer:\n%s", e.name, words)
	}
	if !strings.Contains(words, "error fetch "+other.url+"/") || strings.Contains(words, "not for you") {
		t.Fatalf("%s: a port not forwarded answered:\n%s", e.name, words)
	}
	socks, _ := filepath.Glob(filepath.Join(d.Home.Dir, "fwd-*.sock"))
	if len(socks) != 1 {
		t.Fatalf("%s: the live run's forward sockets: %v", e.name, socks)
	}
	d.MustRun("task", "stop", task.ID)
	daemontest.Eventually(t, wait, "the forward's socket removed", func() bool {
		socks, _ = filepath.Glob(filepath.Join(d.Home.Dir, "fwd-*.sock"))
		return len(socks) == 0
	})
}

// kandev image build (issue 36) makes an image offline from the agent as
// installed here, and the profile runs in it: a node launcher installed
// into a project's node_modules, running the mock agent, with its node,
// the libraries node and kandev link, a shell and git from the image.
func TestImageBuildRunsTheAgent(t *testing.T) {
	for _, name := range engines {
		t.Run(name, func(t *testing.T) { testImageBuildRunsTheAgent(t, name) })
	}
}

func testImageBuildRunsTheAgent(t *testing.T, name string) {
	e := startEngine(t, name, false)
	node := needNode(t)
	root, err := os.MkdirTemp("", "kdimg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	home := filepath.Join(root, "home")
	secret := filepath.Join(home, ".ssh", "id_ed25519")
	modules := filepath.Join(root, "project", "node_modules")
	sdk := filepath.Join(modules, "@anthropic-ai", "claude-agent-sdk", "index.js")
	bin := daemontest.Binary(t)
	files := map[string]string{
		filepath.Join(modules, "@agentclientprotocol", "claude-agent-acp", "dist", "index.js"): "#!/usr/bin/env node\n" +
			"const sdk = require('@anthropic-ai/claude-agent-sdk');\n" +
			"const { spawn } = require('child_process');\n" +
			"const env = { ...process.env, KANDEV_MOCK_STATE_DIR: process.env.HOME + '/.mock-state' };\n" +
			"const c = spawn(sdk.agent, ['mock-agent'], { stdio: 'inherit', env });\n" +
			"c.on('exit', (code) => process.exit(code === null ? 1 : code));\n",
		sdk:    "module.exports = { agent: " + strconv.Quote(bin) + " };\n",
		secret: "operator's key\n",
	}
	writeFiles(t, 0o755, files)
	launcher := filepath.Join(modules, ".bin", "claude-agent-acp")
	if err := os.MkdirAll(filepath.Dir(launcher), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../@agentclientprotocol/claude-agent-acp/dist/index.js", launcher); err != nil {
		t.Fatal(err)
	}
	// An MCP server of the profile's, installed elsewhere (npm's global
	// layout): the agent starts it inside the container, which shows its
	// install at the same path, run by the image's node.
	tools := filepath.Join(root, "tools")
	writeFiles(t, 0o755, map[string]string{
		filepath.Join(tools, "lib", "node_modules", "probe-mcp", "index.js"): probeServer,
		filepath.Join(tools, "lib", "node_modules", "probe-lib", "index.js"): "module.exports = { name: 'probe-lib' };\n",
	})
	if err := os.MkdirAll(filepath.Join(tools, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../lib/node_modules/probe-mcp/index.js", filepath.Join(tools, "bin", "probe-mcp")); err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, daemontest.WithEnv(append([]string{"HOME=" + home, "KANDEV_PERMISSION=allow",
		"PATH=" + filepath.Dir(launcher) + ":" + filepath.Join(tools, "bin") + ":" + filepath.Dir(node) + ":" + os.Getenv("PATH")}, e.env...)...))
	leaveNoContainer(t, e)
	d.MustRun("profile", "add", "local", "--command", "claude-agent-acp", "--sandbox", name, "--mcp-server", "probe=probe-mcp")
	tag := fmt.Sprintf("kandev-test-built:%d", time.Now().UnixNano())
	res := d.Run("image", "build", "local", "--engine", name, "--tag", tag)
	if res.Code != 0 {
		t.Fatalf("image build: exit %d\n%s\n%s", res.Code, res.Stdout, res.Stderr)
	}
	t.Cleanup(func() { _ = e.command("rmi", "--force", tag).Run() })
	if strings.TrimSpace(res.Stdout) != tag || !strings.Contains(res.Stderr, "profile local now uses image "+tag) {
		t.Fatalf("image build said:\n%s\n%s", res.Stdout, res.Stderr)
	}
	// The closure is in the image itself, and nothing else of the home.
	probe := e.must(t, "run", "--rm", "--network", "none", tag, "/bin/sh", "-c",
		"test -f "+sdk+" && echo has-sdk; test -e "+secret+" || echo no-key; git --version; node --version")
	for _, want := range []string{"has-sdk", "no-key", "git version", "v"} {
		if !strings.Contains(probe, want) {
			t.Fatalf("inside the image, %q is missing:\n%s", want, probe)
		}
	}
	work := filepath.Join(root, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	inside, escape := filepath.Join(work, "from-probe"), filepath.Join(root, "escape")
	probeArgs, _ := json.Marshal(map[string][]string{"look": {secret}, "write": {inside, escape}})
	task := create(t, d, api.CreateTaskInput{Title: "built", Profile: "local", CWD: work, Start: true,
		Prompt: "mock: sh git init -q . && git --version && cat " + secret + "; echo in-image\n" +
			"mock: servers\nmock: servercall probe probe " + string(probeArgs) + "\nmock: say probed"})
	logTaskOnFailure(t, d, task.ID, nil)
	if task.Sandbox != name {
		t.Fatalf("sandbox %q", task.Sandbox)
	}
	out := shSaid(t, d, task.ID, 1)
	if !strings.Contains(out, "git version") || !strings.Contains(out, "in-image") || strings.Contains(out, "operator's key") {
		t.Fatalf("the agent's shell in the built image:\n%s", out)
	}
	// The profile's MCP server ran in the container: its package found,
	// the home's secret not, its writes on the host only in the worktree.
	waitSaid(t, d, task.ID, "probed")
	words := said(t, d, task.ID)
	if all := strings.Join(words, "\n"); !strings.Contains(all, "; probe (probe)") {
		t.Fatalf("the servers the agent lists in the container:\n%s", all)
	}
	r := probeSaid(t, words, "probe")
	if r.Lib != "probe-lib" || r.Seen[secret] || r.Wrote[inside] != "ok" {
		t.Errorf("the MCP server in the container: %+v", r)
	}
	if b, err := os.ReadFile(inside); err != nil || string(b) != "probe\n" {
		t.Errorf("the worktree's file on the host: %q %v", b, err)
	}
	if _, err := os.Stat(escape); err == nil {
		t.Errorf("the MCP server in the container wrote %s on the host", escape)
	}
	d.MustRun("task", "stop", task.ID)
	noContainersLeft(t, e, "stop")
}
