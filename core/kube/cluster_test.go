package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/api"
)

// These tests run against a real cluster: the one .ci/kube-up builds and
// starts (KANDEV_TEST_KUBECONFIG=its kubeconfig), else they skip, as the
// docker tests do without docker. KANDEV_TEST_KUBE_IMAGE names the image
// (default: kube-up's busybox, imported there, never pulled).
func testCluster(t *testing.T) *Client {
	t.Helper()
	kc := os.Getenv("KANDEV_TEST_KUBECONFIG")
	if kc == "" {
		t.Skip("no cluster: set KANDEV_TEST_KUBECONFIG (.ci/kube-up prints one)")
	}
	c, err := Connect(Target{Kubeconfig: kc})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testImage() string {
	if i := os.Getenv("KANDEV_TEST_KUBE_IMAGE"); i != "" {
		return i
	}
	return "kandev.local/busybox:1"
}

func TestClusterCheck(t *testing.T) {
	c := testCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := c.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Server == "" || rep.Namespace != "default" {
		t.Fatalf("report %+v (%s)", rep, rep.Problem())
	}
	bad, err := Connect(Target{Kubeconfig: os.Getenv("KANDEV_TEST_KUBECONFIG"), Namespace: "no-such-namespace"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Check(ctx); err == nil || !strings.Contains(err.Error(), `namespace "no-such-namespace" does not exist`) {
		t.Fatalf("a missing namespace: %v", err)
	}
	if _, err := Connect(Target{Kubeconfig: os.Getenv("KANDEV_TEST_KUBECONFIG"), Context: "nope"}); err == nil ||
		!strings.Contains(err.Error(), `no context "nope"`) {
		t.Fatalf("a missing context: %v", err)
	}
}

// TestMain removes the static kandev the cluster tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if staticBin != "" {
		os.RemoveAll(filepath.Dir(staticBin))
	}
	os.Exit(code)
}

var (
	staticOnce sync.Once
	staticBin  string
	staticErr  error
)

// staticKandev builds kandev without cgo, so it runs in an image with no
// libc: its mock agent is what runs in the pod.
func staticKandev(t *testing.T) string {
	t.Helper()
	staticOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kandev-kube-bin-")
		if err != nil {
			staticErr = err
			return
		}
		staticBin = filepath.Join(dir, "kandev")
		cmd := exec.Command("go", "build", "-o", staticBin, "./cmd/kandev")
		cmd.Dir = filepath.Join("..", "..")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			staticErr = fmt.Errorf("static build: %v\n%s", err, out)
		}
	})
	if staticErr != nil {
		t.Fatal(staticErr)
	}
	return staticBin
}

// said collects the agent's messages.
type said struct {
	mu   sync.Mutex
	text strings.Builder
}

func (h *said) Update(_ context.Context, n acp.SessionNotification) {
	if m := n.Update.AgentMessageChunk; m != nil && m.Content.Text != nil {
		h.mu.Lock()
		h.text.WriteString(m.Content.Text.Text)
		h.mu.Unlock()
	}
}
func (h *said) Permission(context.Context, acp.RequestPermissionRequest) acp.RequestPermissionResponse {
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}
}
func (h *said) Garbage(string) {}
func (h *said) Fault(string)   {}
func (h *said) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.text.String()
}

// The mock agent runs in a pod of its own: kandev's binary carried in, ACP
// over the attach stream, a prompt and its answer, the session's id in
// its environment; stop deletes the pod and nothing of the session is
// left.
func TestClusterPodRunsAgent(t *testing.T) {
	c := testCluster(t)
	bin := staticKandev(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	session := fmt.Sprintf("kt%d", time.Now().UnixNano())
	home := "kubetest"
	sess, peer, err := c.Start(ctx, PodSpec{
		SessionID: session, TaskID: "t1", HomeID: home, Image: testImage(), PullNever: true,
		Command: BinaryPath, Args: []string{"mock-agent"}, Grace: 1,
		Env: []string{"KANDEV_SESSION_ID=" + session},
	}, bin, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeletePod(context.Background(), sess.Name, 0) })
	if pods, err := c.Pods(ctx, SessionSelector(home, session)); err != nil || len(pods) != 1 {
		t.Fatalf("pods of the session: %d, %v", len(pods), err)
	}
	h := &said{}
	run := agent.Attach(agent.Spec{Command: BinaryPath, Dir: WorkDir, SessionID: session}, h, peer)
	if err := run.Open(ctx); err != nil {
		t.Fatalf("open: %v", err)
	}
	if _, err := run.Prompt(ctx, "mock: say hello from the pod"); err != nil {
		t.Fatalf("prompt: %v", err)
	}
	if _, err := run.Prompt(ctx, "mock: env KANDEV_SESSION_ID"); err != nil {
		t.Fatalf("prompt: %v", err)
	}
	if got := h.String(); !strings.Contains(got, "hello from the pod") || !strings.Contains(got, session) {
		t.Fatalf("the agent said %q", got)
	}
	// Stop: the agent's EOF, then the pod deleted.
	run.Terminate(agent.Grace{Cancel: time.Second, Interrupt: time.Second, Terminate: time.Second})
	<-sess.Done()
	if err := sess.Delete(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if pods, err := c.Pods(ctx, HomeSelector(home)); err != nil || len(pods) != 0 {
		t.Fatalf("left in the namespace: %d pods, %v", len(pods), err)
	}
}

// A pod whose image is not on the node (and may not be pulled) fails the
// start with the kubelet's reason, and is deleted.
func TestClusterPodCannotStart(t *testing.T) {
	c := testCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	session := fmt.Sprintf("kt%d", time.Now().UnixNano())
	_, _, err := c.Start(ctx, PodSpec{SessionID: session, HomeID: "kubetest", Image: "kandev.local/absent:1",
		PullNever: true, Command: "/bin/true", Grace: 1}, "", nil)
	if err == nil || !strings.Contains(err.Error(), "ErrImageNeverPull") {
		t.Fatalf("start with an absent image: %v", err)
	}
	if pods, err := c.Pods(ctx, SessionSelector("kubetest", session)); err != nil || len(pods) != 0 {
		t.Fatalf("left in the namespace: %d pods, %v", len(pods), err)
	}
}

// The sweep deletes a home's pods whose session is not live, and only
// those.
func TestClusterSweep(t *testing.T) {
	c := testCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	home := fmt.Sprintf("sweep%d", time.Now().UnixNano())
	var names []string
	for _, s := range []string{"live", "dead"} {
		sess, _, err := c.Start(ctx, PodSpec{SessionID: s + home, HomeID: home, Image: testImage(), PullNever: true,
			Command: "/bin/sleep", Args: []string{"600"}, Grace: 1}, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, sess.Name)
		t.Cleanup(func() { _ = c.DeletePod(context.Background(), sess.Name, 0) })
	}
	swept, err := c.Sweep(ctx, home, func(s string) bool { return s == "live"+home })
	if err != nil {
		t.Fatal(err)
	}
	if len(swept) != 1 || swept[0] != names[1] {
		t.Fatalf("swept %q, want [%s]", swept, names[1])
	}
	pods, err := c.Pods(ctx, HomeSelector(home))
	if err != nil || len(pods) != 1 || pods[0].Name != names[0] {
		t.Fatalf("left: %d pods, %v", len(pods), err)
	}
}

// The agent's `kandev mcp` in the pod reaches the daemon's socket through
// the relay and spare exec streams (no port open anywhere), with the
// session's token: a stand-in daemon serves the tool surface and sees the
// token.
func TestClusterPodMCP(t *testing.T) {
	c := testCluster(t)
	bin := staticKandev(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sock, seen := standInDaemon(t)
	session := fmt.Sprintf("kt%d", time.Now().UnixNano())
	sess, peer, err := c.Start(ctx, PodSpec{
		SessionID: session, HomeID: "kubetest", Image: testImage(), PullNever: true, MCP: true,
		Command: BinaryPath, Args: []string{"mock-agent"}, Grace: 1,
	}, bin, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeletePod(context.Background(), sess.Name, 0) })
	sess.ForwardMCP(ctx, sock, t.Logf)
	h := &said{}
	run := agent.Attach(agent.Spec{Command: BinaryPath, Dir: WorkDir, SessionID: session,
		MCPServers: []acp.McpServer{{Stdio: &acp.McpServerStdio{Name: "kandev", Command: BinaryPath, Args: []string{"mcp"},
			Env: []acp.EnvVariable{{Name: "KANDEV_SOCKET", Value: MCPSocket}, {Name: "KANDEV_TOKEN", Value: "tok-" + session}}}}},
	}, h, peer)
	if err := run.Open(ctx); err != nil {
		t.Fatalf("open: %v", err)
	}
	if _, err := run.Prompt(ctx, "mock: tools"); err != nil {
		t.Fatalf("prompt: %v", err)
	}
	if got := h.String(); !strings.Contains(got, "tools: get_task_diff_kandev") {
		t.Fatalf("the agent said %q", got)
	}
	if got := seen(); !strings.Contains(got, "GET /v1/mcp/surface Bearer tok-"+session) {
		t.Fatalf("the daemon saw %q", got)
	}
	run.Terminate(agent.Grace{Cancel: time.Second, Interrupt: time.Second, Terminate: time.Second})
	<-sess.Done()
	if err := sess.Delete(ctx, 1); err != nil {
		t.Fatal(err)
	}
}

// The worktree goes into the pod by git and comes back with what the agent
// committed there and what it left uncommitted, as from an SSH host.
func TestClusterWorktreeTravels(t *testing.T) {
	c := testCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	wt := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = wt
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(wt, "a.txt"), []byte("one\n"), 0o644)
	git("add", "a.txt")
	git("commit", "-qm", "first")

	session := fmt.Sprintf("kt%d", time.Now().UnixNano())
	sess, _, err := c.Start(ctx, PodSpec{SessionID: session, HomeID: "kubetest", Image: testImage(), PullNever: true,
		Command: "/bin/sleep", Args: []string{"600"}, Grace: 1}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeletePod(context.Background(), sess.Name, 0) })
	base, err := sess.CopyIn(ctx, wt, "kandev/t1")
	if err != nil {
		t.Fatal(err)
	}
	if base != git("rev-parse", "HEAD") {
		t.Fatalf("base %s", base)
	}
	// The agent's work: a commit, and a file left uncommitted.
	if out, err := c.Exec(ctx, sess.Name, nil, "/bin/sh", "-c", `set -e; cd /work
test "$(cat a.txt)" = one
test "$(git rev-parse --abbrev-ref HEAD)" = kandev/t1
echo two > a.txt
git -c user.name=agent -c user.email=a@a commit -qam second
echo new > b.txt`); err != nil {
		t.Fatalf("in the pod: %v: %s", err, out)
	}
	if err := sess.FetchBack(ctx, wt, base); err != nil {
		t.Fatal(err)
	}
	if got := git("log", "--format=%s", "-1"); got != "second" {
		t.Errorf("local head is %q, want the pod's commit", got)
	}
	a, _ := os.ReadFile(filepath.Join(wt, "a.txt"))
	b, _ := os.ReadFile(filepath.Join(wt, "b.txt"))
	if string(a) != "two\n" || string(b) != "new\n" {
		t.Errorf("a.txt %q, b.txt %q", a, b)
	}
	if st := git("status", "--porcelain"); st != "?? b.txt" {
		t.Errorf("status %q, want b.txt uncommitted", st)
	}
	if _, err := sess.CopyIn(ctx, wt, "bad branch"); err == nil {
		t.Error("a branch with a space was carried in")
	}
}

// gitWorktree makes a git repository with one commit on branch.
func gitWorktree(t *testing.T, branch string) string {
	t.Helper()
	wt := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", branch}, {"commit", "-q", "--allow-empty", "-m", "base"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = wt
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return wt
}

// The API server killed and started again mid-session
// (KANDEV_TEST_KUBE_RESTART names .ci/kube-restart; else skipped): the
// attach stream is cut, which the launcher tells from the agent's exit
// (Lost); the agent, reading EOF, ends; once the API server is back its
// worktree comes back and the pod is deleted.
func TestClusterAPIServerRestart(t *testing.T) {
	c := testCluster(t)
	restart := os.Getenv("KANDEV_TEST_KUBE_RESTART")
	if restart == "" {
		t.Skip("set KANDEV_TEST_KUBE_RESTART to .ci/kube-restart to restart the API server mid-session")
	}
	bin := staticKandev(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	wt := gitWorktree(t, "kandev/t2")
	home := fmt.Sprintf("restart%d", time.Now().UnixNano())
	session := "s" + home
	l := &Launcher{Client: c, Image: testImage(), PullNever: true, Grace: 1, SelfExe: bin, Logf: t.Logf}
	h := &said{}
	run, err := l.Launch(agent.Spec{Command: bin, Args: []string{"mock-agent"}, Dir: wt, SessionID: session, HomeID: home}, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Open(ctx); err != nil {
		t.Fatalf("open: %v", err)
	}
	if _, err := run.Prompt(ctx, "mock: write before.txt before the outage"); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(restart, "kube-apiserver").CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", restart, err, out)
	}
	select {
	case <-run.Exited():
	case <-ctx.Done():
		t.Fatal("the run outlived its cut stream")
	}
	if !l.Lost(session) {
		t.Fatalf("a cut stream was taken for the agent's exit (%s)", run.ExitReason())
	}
	if b, err := os.ReadFile(filepath.Join(wt, "before.txt")); err != nil || !strings.Contains(string(b), "before the outage") {
		t.Fatalf("before.txt back here: %q, %v", b, err)
	}
	if pods, err := c.Pods(ctx, HomeSelector(home)); err != nil || len(pods) != 0 {
		t.Fatalf("left in the namespace: %d pods, %v", len(pods), err)
	}
}

// standInDaemon serves the tool surface on a unix socket, as the daemon's
// mcp.sock does, and tells what requests it saw (method, path, token).
func standInDaemon(t *testing.T) (string, func() string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "kmcp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "mcp.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var auth []string
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		if r.URL.Path != "/v1/mcp/surface" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(api.ToolSurface{Surface: "agent", Tools: []string{"get_task_diff_kandev"}})
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return sock, func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(auth, "\n")
	}
}

// The engine's seam: the Launcher runs the mock agent in a pod with the
// task's worktree carried in, its kandev mcp reaching the daemon, its
// stderr in the session's log; at stop what it wrote comes back into the
// local worktree and the pod is gone.
func TestClusterLauncher(t *testing.T) {
	c := testCluster(t)
	bin := staticKandev(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sock, seen := standInDaemon(t)
	wt := gitWorktree(t, "kandev/t1")
	home := fmt.Sprintf("launch%d", time.Now().UnixNano())
	session := "s" + home
	l := &Launcher{Client: c, Image: testImage(), PullNever: true, Grace: 1, SelfExe: bin, DaemonSocket: sock, Logf: t.Logf}
	h := &said{}
	logPath := filepath.Join(t.TempDir(), "agent.log")
	run, err := l.Launch(agent.Spec{Command: bin, Args: []string{"mock-agent"}, Dir: wt, SessionID: session, HomeID: home,
		Env: []string{"KANDEV_TASK_ID=t1"}, LogPath: logPath,
		MCPServers: []acp.McpServer{{Stdio: &acp.McpServerStdio{Name: "kandev", Command: bin, Args: []string{"mcp"},
			Env: []acp.EnvVariable{{Name: "KANDEV_SOCKET", Value: sock}, {Name: "KANDEV_TOKEN", Value: "tok"}}}}},
	}, h)
	if err != nil {
		t.Fatal(err)
	}
	if pods, err := c.Pods(ctx, HomeSelector(home)); err != nil || len(pods) != 1 || pods[0].Labels[LabelTask] != "t1" {
		t.Fatalf("pods of the home: %v, %v", pods, err)
	}
	if err := run.Open(ctx); err != nil {
		t.Fatalf("open: %v", err)
	}
	for _, p := range []string{"mock: tools", "mock: write notes.txt written in the pod", "mock: stderr to the log"} {
		if _, err := run.Prompt(ctx, p); err != nil {
			t.Fatalf("prompt %q: %v", p, err)
		}
	}
	if got := h.String(); !strings.Contains(got, "tools: get_task_diff_kandev") {
		t.Fatalf("the agent said %q", got)
	}
	if !strings.Contains(seen(), "Bearer tok") {
		t.Fatalf("the daemon saw %q", seen())
	}
	run.Terminate(agent.Grace{Cancel: time.Second, Interrupt: time.Second, Terminate: time.Second})
	if l.Lost(session) {
		t.Error("a stop was taken for a lost stream")
	}
	b, err := os.ReadFile(filepath.Join(wt, "notes.txt"))
	if err != nil || !strings.Contains(string(b), "written in the pod") {
		t.Fatalf("notes.txt back here: %q, %v", b, err)
	}
	if pods, err := c.Pods(ctx, HomeSelector(home)); err != nil || len(pods) != 0 {
		t.Fatalf("left in the namespace: %d pods, %v", len(pods), err)
	}
	if lg, _ := os.ReadFile(logPath); !strings.Contains(string(lg), "to the log") {
		t.Errorf("the session's log: %q", lg)
	}
}
