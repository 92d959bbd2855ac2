// Package daemontest runs the real kandev binary for integration tests: it
// builds it once per test process, starts daemons in private homes, and
// runs CLI commands against them.
package daemontest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemonclient"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

// Main wraps a package's TestMain: it removes the built binary afterwards.
func Main(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// Binary builds ./cmd/kandev once and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			binErr = err
			return
		}
		binDir, err = os.MkdirTemp("", "kandev-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(binDir, "kandev")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/kandev")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatalf("build kandev: %v", binErr)
	}
	return binPath
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// Daemon is a running `kandev serve` in its own home.
type Daemon struct {
	t    testing.TB
	Bin  string
	Home core.Home
	Env  []string
	// Dir is where the CLI runs: a directory of the test's own, never the
	// test's working directory, which is inside kandev's own repository
	// (a task created without --cwd there made worktrees of it).
	Dir    string
	Client *daemonclient.Client
	cmd    *exec.Cmd
	log    *bytes.Buffer
	logMu  *sync.Mutex
	done   chan struct{}
}

// Option adjusts a daemon before it starts.
type Option func(*Daemon)

// WithEnv adds KEY=VALUE entries to the daemon's (and CLI's) environment.
func WithEnv(kv ...string) Option { return func(d *Daemon) { d.Env = append(d.Env, kv...) } }

// WithBinary runs the daemon (and the CLI) from bin instead of the
// default build: a static build whose mock agent runs in a bare container.
func WithBinary(bin string) Option { return func(d *Daemon) { d.Bin = bin } }

// WithHome uses an existing home (for restarts).
func WithHome(dir string) Option { return func(d *Daemon) { d.Home = core.Home{Dir: dir} } }

// Start builds kandev if needed and starts a daemon in a fresh home. The
// daemon is stopped (SIGTERM, then waited for) when the test ends.
func Start(t testing.TB, opts ...Option) *Daemon {
	t.Helper()
	d := &Daemon{t: t, Bin: Binary(t)}
	for _, o := range opts {
		o(d)
	}
	if d.Home.Dir == "" {
		d.Home = core.Home{Dir: shortTempDir(t)}
	}
	if d.Dir == "" {
		d.Dir = t.TempDir()
	}
	d.Env = append([]string{
		"KANDEV_HOME=" + d.Home.Dir,
		"KANDEV_MOCK_STATE_DIR=" + filepath.Join(d.Home.Dir, "mock-state"),
		"KANDEV_QUESTION_TURN_GRACE=300ms",
		// The user's own config.toml must not reach a test daemon, and a
		// top-level task the CLI creates runs the mock whatever agents this
		// machine has on PATH.
		"KANDEV_CONFIG=" + filepath.Join(d.Home.Dir, "config.toml"),
		"KANDEV_PROFILE=mock",
	}, d.Env...)
	d.start()
	t.Cleanup(d.Stop)
	return d
}

// shortTempDir keeps unix socket paths under the 108-byte limit.
func shortTempDir(t testing.TB) string {
	dir, err := os.MkdirTemp("", "kd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// environ is the test process's environment without kandev variables it
// may have inherited (a test run from inside a kandev agent), plus ours.
func (d *Daemon) environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KANDEV_") {
			env = append(env, kv)
		}
	}
	return append(env, d.Env...)
}

func (d *Daemon) start() {
	d.t.Helper()
	d.log, d.logMu = &bytes.Buffer{}, &sync.Mutex{}
	cmd := exec.Command(d.Bin, "serve", "--home", d.Home.Dir)
	cmd.Env = d.environ()
	w := &lockedWriter{mu: d.logMu, buf: d.log}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		d.t.Fatalf("start daemon: %v", err)
	}
	d.cmd = cmd
	done := make(chan struct{})
	d.done = done
	go func() { _ = cmd.Wait(); close(done) }()
	d.Client = daemonclient.Dial(d.Home.Socket())
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := d.Client.Ping(ctx)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-d.done:
			d.t.Fatalf("daemon exited during start:\n%s", d.Log())
		default:
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("daemon did not answer within 15s: %v\n%s", err, d.Log())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Log is what the daemon printed so far.
func (d *Daemon) Log() string {
	d.logMu.Lock()
	defer d.logMu.Unlock()
	return d.log.String()
}

// PID is the daemon's process id.
func (d *Daemon) PID() int { return d.cmd.Process.Pid }

// Stop sends SIGTERM and waits for a clean exit.
func (d *Daemon) Stop() {
	if d.cmd == nil {
		return
	}
	select {
	case <-d.done:
	default:
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
			<-d.done
			d.t.Errorf("daemon did not stop within 20s of SIGTERM:\n%s", d.Log())
		}
	}
	d.Client.Close()
	// A CLI command the test ran while this daemon was down may have
	// started another in the home (autostart, detached): it and its
	// agents must not outlive the test either. daemon stop starts none.
	stop := exec.Command(d.Bin, "daemon", "stop")
	stop.Env = d.environ()
	if out, _ := stop.CombinedOutput(); strings.Contains(string(out), "Stopped") {
		d.t.Logf("stopped a daemon the test's commands started: %s", strings.TrimSpace(string(out)))
	}
}

// Kill9 kills the daemon with SIGKILL, as a crash would, leaving its
// agents and state behind.
func (d *Daemon) Kill9() {
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
	d.Client.Close()
}

// Exited closes when the daemon process has exited.
func (d *Daemon) Exited() <-chan struct{} { return d.done }

// SetEnv replaces (or adds) KEY=VALUE in the environment used from the next
// Restart or Run on.
func (d *Daemon) SetEnv(key, value string) {
	for i, kv := range d.Env {
		if strings.HasPrefix(kv, key+"=") {
			d.Env[i] = key + "=" + value
			return
		}
	}
	d.Env = append(d.Env, key+"="+value)
}

// Restart starts a new daemon on the same home. A daemon still running is
// stopped first (SIGTERM): a second one would find the home locked and
// exit, and the first would answer in its place, untracked.
func (d *Daemon) Restart() {
	d.t.Helper()
	d.Stop()
	d.start()
}

// Result is a finished CLI run.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// Run runs `kandev ARGS...` against this daemon's home.
func (d *Daemon) Run(args ...string) Result {
	d.t.Helper()
	return d.RunEnv(d.environ(), "", args...)
}

// RunEnv runs kandev with exactly the environment env and the given stdin.
func (d *Daemon) RunEnv(env []string, stdin string, args ...string) Result {
	d.t.Helper()
	cmd := exec.Command(d.Bin, args...)
	cmd.Env = env
	cmd.Dir = d.Dir
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			d.t.Fatalf("run kandev %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return Result{Stdout: out.String(), Stderr: errb.String(), Code: code}
}

// MustRun runs kandev and fails the test on a non-zero exit.
func (d *Daemon) MustRun(args ...string) string {
	d.t.Helper()
	r := d.Run(args...)
	if r.Code != 0 {
		d.t.Fatalf("kandev %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

// CreateTask creates a task through the daemon's client; a task given no
// directory works in the system's temp dir (never a repository, so it
// gets no worktree).
func (d *Daemon) CreateTask(t testing.TB, in api.CreateTaskInput) core.Task {
	t.Helper()
	if in.CWD == "" {
		in.CWD = os.TempDir()
	}
	task, err := d.Client.CreateTask(context.Background(), in)
	if err != nil {
		t.Fatalf("create task %q: %v", in.Title, err)
	}
	return task
}

// Conversation reads a task's whole conversation, page by page.
func (d *Daemon) Conversation(t testing.TB, id string) []core.Message {
	t.Helper()
	var all []core.Message
	var after int64
	for {
		page, err := d.Client.Conversation(context.Background(), id, api.ConversationInput{After: after, Limit: 500})
		if err != nil {
			t.Fatalf("conversation of %s: %v", id, err)
		}
		all = append(all, page.Messages...)
		after = page.Next
		if !page.More {
			return all
		}
	}
}

// Eventually polls cond until it holds or the timeout passes.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type lockedWriter struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}
