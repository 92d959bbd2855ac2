package daemon_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon"
	"github.com/kandev/kandev/core/daemon/daemontest"
	"github.com/kandev/kandev/core/daemonclient"
)

// escapeTitle is the probe: an OSC 52 clipboard write in a title.
const escapeTitle = "x\x1b]52;c;aGk=\x07"

// TestTextOutputWritesNoEscape: titles, descriptions, agent output and
// error messages carrying escape sequences (ESC-introduced and the C1
// forms) reach the terminal without a single control byte, through the
// real binary; --json still carries them exactly.
func TestTextOutputWritesNoEscape(t *testing.T) {
	d := daemontest.Start(t)
	task := create(t, d, api.CreateTaskInput{Title: escapeTitle, Description: "desc \x1b]0;pwned\x07 \u009b2J end",
		Prompt: "mock: say agent \x1b[2J\x1b]8;;http://x.test\x1b\\link\x1b]8;;\x1b\\ \u009d0;t\u009c done", Start: true})
	waitSaid(t, d, task.ID, "done")

	check := func(args ...string) daemontest.Result {
		t.Helper()
		r := d.Run(args...)
		for name, out := range map[string]string{"stdout": r.Stdout, "stderr": r.Stderr} {
			if i := strings.IndexFunc(out, isTerminalControl); i >= 0 {
				t.Errorf("kandev %s: %s holds control %q at %d: %q", strings.Join(args, " "), name, out[i:i+1], i, out)
			}
		}
		return r
	}
	if r := check("task", "list"); r.Code != 0 || !strings.Contains(r.Stdout, task.ID+" x") {
		t.Errorf("task list: exit %d, %q", r.Code, r.Stdout)
	}
	if r := check("task", "show", task.ID); r.Code != 0 || !strings.Contains(r.Stdout, "desc  ") || !strings.Contains(r.Stdout, "end") {
		t.Errorf("task show: exit %d, %q", r.Code, r.Stdout)
	}
	if r := check("task", "log", task.ID); r.Code != 0 || !strings.Contains(r.Stdout, "agent link 0;t done") {
		t.Errorf("task log: exit %d, %q", r.Code, r.Stdout)
	}
	// The turn ended without a handoff: the task went back to its
	// creator, which `kandev wait` reports as a person's turn.
	if r := check("wait", task.ID); r.Code != 10 || !strings.Contains(r.Stdout, "ended without handing on") {
		t.Errorf("wait: exit %d, %q %q", r.Code, r.Stdout, r.Stderr)
	}
	if r := check("task", "show", "\x1b]0;t\x07nope"); r.Code == 0 || !strings.Contains(r.Stderr, "nope") {
		t.Errorf("task show of a bad id: exit %d, %q", r.Code, r.Stderr)
	}

	r := d.Run("task", "show", task.ID, "--json")
	var got core.Task
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil || got.Description != "desc \x1b]0;pwned\x07 \u009b2J end" {
		t.Errorf("task show --json: description %q, err %v; want it exact", got.Description, err)
	}
	if r := check("task", "edit", task.ID, "--title", "a\x1b]0;t\x07\u009bb", "--description", "c"); r.Code != 0 {
		t.Errorf("task edit: exit %d, %q", r.Code, r.Stderr)
	}
}

// isTerminalControl: a byte or rune a terminal would act on.
func isTerminalControl(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0)
}

// TestQueueFloodDoesNotLockOutOperator: another task's agent queues
// messages on a busy task up to the cap (and one more, refused); the
// operator's own message and interrupt from the CLI still get through.
func TestQueueFloodDoesNotLockOutOperator(t *testing.T) {
	d := daemontest.Start(t)
	target := create(t, d, api.CreateTaskInput{Title: "target", Prompt: "mock: hang", Start: true})
	waitState(t, d, target.ID, core.SessionRunning)
	var script []string
	for i := 0; i <= api.QueueCap; i++ {
		script = append(script, fmt.Sprintf(`mock: call message_task_kandev {"task_id":%q,"prompt":"flood %d"}`, target.ID, i))
	}
	script = append(script, "mock: say flooded")
	flooder := create(t, d, api.CreateTaskInput{Title: "flooder", Prompt: strings.Join(script, "\n"), Start: true})
	waitSaid(t, d, flooder.ID, "flooded")
	if !saidContains(t, d, flooder.ID, "error message_task_kandev: CONFLICT") {
		t.Fatalf("the flood past the cap was not refused: %q", said(t, d, flooder.ID))
	}
	if got := get(t, d, target.ID); got.Queued != api.QueueCap {
		t.Fatalf("target has %d queued, want the cap %d", got.Queued, api.QueueCap)
	}
	// The operator sees the flood and drops one item by its queue id.
	var q api.QueueView
	if r := d.Run("task", "queue", target.ID, "--json"); r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &q) != nil {
		t.Fatalf("task queue --json: exit %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	if len(q.Items) != api.QueueCap || q.Items[0].Sender != core.ByRef(core.TaskRef(flooder.ID)) || q.Items[0].Position != 1 || q.Items[0].Text != "flood 0" {
		t.Fatalf("queue %+v", q)
	}
	if r := d.Run("task", "queue", target.ID); r.Code != 0 || strings.Count(r.Stdout, "flood ") != api.QueueCap {
		t.Fatalf("task queue: exit %d %q", r.Code, r.Stdout)
	}
	if r := d.Run("task", "queue", target.ID, "--drop", fmt.Sprint(q.Items[0].ID)); r.Code != 0 || strings.Contains(r.Stdout, "flood 0") {
		t.Fatalf("task queue --drop: exit %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	if r := d.Run("task", "queue", target.ID, "--drop", fmt.Sprint(q.Items[0].ID)); r.Code != 1 || !strings.Contains(r.Stderr, "no queued item") {
		t.Fatalf("dropping it again: exit %d %q", r.Code, r.Stderr)
	}
	if got := get(t, d, target.ID); got.Queued != api.QueueCap-1 {
		t.Fatalf("after the drop %d queued, want %d", got.Queued, api.QueueCap-1)
	}
	if r := d.Run("task", "message", target.ID, "mock: say operator got through"); r.Code != 0 {
		t.Fatalf("operator message: exit %d: %s", r.Code, r.Stderr)
	}
	if r := d.Run("task", "message", target.ID, "--interrupt", "mock: say interrupt got through"); r.Code != 0 {
		t.Fatalf("operator interrupt: exit %d: %s", r.Code, r.Stderr)
	}
	waitSaid(t, d, target.ID, "interrupt got through")
	if r := d.Run("task", "queue", target.ID, "--clear", "--json"); r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &q) != nil || len(q.Items) != 0 {
		t.Fatalf("task queue --clear: exit %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
}

// TestAgentReachIsItsToken: an agent inherits no pointer to the operator's
// socket (not the daemon's own KANDEV_HOME, KANDEV_SOCKET or KANDEV_TOKEN
// either); the socket its MCP server is given serves only token calls, so
// the operator's routes are refused with what the agent has.
func TestAgentReachIsItsToken(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_SOCKET=/inherited/kandev.sock", "KANDEV_TOKEN=inherited"))
	task := create(t, d, api.CreateTaskInput{Title: "probe", Start: true, Prompt: strings.Join([]string{
		"mock: env KANDEV_HOME", "mock: env KANDEV_SOCKET", "mock: env KANDEV_TOKEN",
		"mock: mcpenv KANDEV_SOCKET",
		"mock: http GET /v1/tasks", "mock: http POST /v1/tasks/${session_id}/stop", "mock: http GET /v1/events",
		"mock: http GET /v1/mcp/surface",
		"mock: say probed"}, "\n")})
	waitSaid(t, d, task.ID, "probed")
	for _, want := range []string{
		"env KANDEV_HOME: (unset)", "env KANDEV_SOCKET: (unset)", "env KANDEV_TOKEN: (unset)",
		"mcpenv KANDEV_SOCKET: " + d.Home.MCPSocket(),
		"http GET /v1/tasks: 403 FORBIDDEN", "http GET /v1/events: 403 FORBIDDEN",
		"http GET /v1/mcp/surface: 200 -",
	} {
		if !saidContains(t, d, task.ID, want) {
			t.Errorf("agent did not say %q; it said %q", want, said(t, d, task.ID))
		}
	}
	if !saidContains(t, d, task.ID, "/stop: 403 FORBIDDEN") {
		t.Errorf("stop through the agents' socket was not refused: %q", said(t, d, task.ID))
	}
	// Without a token the agents' socket serves nothing, not even the
	// external surface.
	c := daemonclient.Dial(d.Home.MCPSocket())
	defer c.Close()
	ctx := context.Background()
	if _, err := c.ToolSurface(ctx); core.AsError(err).Code != core.CodeForbidden {
		t.Errorf("surface without a token: %v, want FORBIDDEN", err)
	}
	if _, err := c.ListTasks(ctx, api.ListTasksInput{}); core.AsError(err).Code != core.CodeForbidden {
		t.Errorf("operator route on the agents' socket: %v, want FORBIDDEN", err)
	}
	if fi, err := os.Stat(d.Home.MCPSocket()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("agents' socket: %v %v, want mode 0600", fi, err)
	}
}

// TestLoosenedHomeIsTightened: the database files of a real daemon are
// 0600; a home (or socket) loosened while the daemon runs is logged and
// tightened again before the next request is served.
func TestLoosenedHomeIsTightened(t *testing.T) {
	d := daemontest.Start(t)
	create(t, d, api.CreateTaskInput{Title: "write something"})
	for _, p := range []string{d.Home.DB(), d.Home.DB() + "-wal", d.Home.DB() + "-shm"} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want mode 0600", p, fi, err)
		}
	}
	if err := os.Chmod(d.Home.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d.Home.Socket(), 0o666); err != nil {
		t.Fatal(err)
	}
	d.MustRun("task", "list")
	for p, want := range map[string]os.FileMode{d.Home.Dir: 0o700, d.Home.Socket(): 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s after a request: %v %v, want mode %o", p, fi, err, want)
		}
	}
	if !strings.Contains(d.Log(), "kandev home loosened") {
		t.Errorf("the daemon did not log the loosened home:\n%s", d.Log())
	}
}

// TestRequestLimits: a body over the limit gets a size error (not
// "unexpected EOF"); an empty task id gets the usual not-found error, not
// the mux's plain-text 404 page.
func TestRequestLimits(t *testing.T) {
	d := daemontest.Start(t)
	ctx := context.Background()
	_, err := d.Client.CreateTask(ctx, api.CreateTaskInput{Title: "big", Description: strings.Repeat("x", daemon.MaxBody+1), CWD: os.TempDir()})
	if e := core.AsError(err); e.Code != core.CodeValidation || !strings.Contains(e.Message, "too large") {
		t.Errorf("oversized body: %v, want a VALIDATION_ERROR about its size", err)
	}
	for _, args := range [][]string{{"task", "show", ""}, {"task", "log", ""}, {"task", "queue", ""}, {"task", "stop", ""}, {"task", "message", "", "hi"}} {
		r := d.Run(args...)
		if r.Code != 1 || !strings.Contains(r.Stderr, "not found") || strings.Contains(r.Stderr, "404 page") {
			t.Errorf("kandev %q: exit %d, stderr %q; want the not-found error", args, r.Code, r.Stderr)
		}
		r = d.Run(append(args, "--json")...)
		var body struct{ Error core.Error }
		if json.Unmarshal([]byte(r.Stderr), &body) != nil || body.Error.Code != core.CodeNotFound {
			t.Errorf("kandev %q --json: stderr %q; want a NOT_FOUND error", args, r.Stderr)
		}
	}
	// Unknown routes and methods answer in the API's error shape too.
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", d.Home.Socket())
	}}}
	defer hc.CloseIdleConnections()
	for _, req := range [][2]string{{"GET", "/v1/nope"}, {"DELETE", "/v1/version"}, {"GET", "/v1/tasks/"}} {
		rq, _ := http.NewRequest(req[0], "http://kandev"+req[1], nil)
		resp, err := hc.Do(rq)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Error core.Error }
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusNotFound || body.Error.Code != core.CodeNotFound {
			t.Errorf("%s %s: %d %+v %v; want a JSON NOT_FOUND", req[0], req[1], resp.StatusCode, body, err)
		}
	}
}

// TestLogFollowFailsWhenDaemonDies: `task log --follow` exits non-zero,
// saying why, when the daemon goes away under it.
func TestLogFollowFailsWhenDaemonDies(t *testing.T) {
	d := daemontest.Start(t)
	task := create(t, d, api.CreateTaskInput{Title: "followed", Prompt: "mock: say hello", Start: true})
	waitSaid(t, d, task.ID, "hello")
	cmd := exec.Command(d.Bin, "task", "log", "--follow", task.ID)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KANDEV_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, d.Env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The backlog is printed after the follower subscribed: once "hello"
	// is out, it follows the live stream.
	sc := bufio.NewScanner(out)
	for sc.Scan() && !strings.Contains(sc.Text(), "agent › hello") {
	}
	d.Stop()
	for sc.Scan() {
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "closed the event stream") {
		t.Fatalf("task log --follow after the daemon died: %v, stderr %q; want exit 1 saying why", err, stderr.String())
	}
}

// TestArchivedParentLeavesInProgress: archiving a working task ends its run
// and moves it to review (it can take no turn); its running child is not
// touched.
func TestArchivedParentLeavesInProgress(t *testing.T) {
	d := daemontest.Start(t)
	parent := create(t, d, api.CreateTaskInput{Title: "parent", Start: true,
		Prompt: `mock: call create_task_kandev {"title":"kid","prompt":"mock: hang"}` + "\nmock: hang"})
	waitState(t, d, parent.ID, core.SessionRunning)
	var kid core.Task
	daemontest.Eventually(t, wait, "the child to run", func() bool {
		tasks, err := d.Client.ListTasks(context.Background(), api.ListTasksInput{Root: parent.ID})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range tasks {
			if c.ParentID == parent.ID && c.Session != nil && c.Session.State == core.SessionRunning {
				kid = c
				return true
			}
		}
		return false
	})
	if got := get(t, d, parent.ID); got.Status != core.StatusInProgress {
		t.Fatalf("parent before archive: %s", got.Status)
	}
	d.MustRun("task", "archive", parent.ID)
	got := get(t, d, parent.ID)
	if !got.Archived || got.Status != core.StatusReview || (got.Session != nil && got.Session.State.Live()) {
		t.Fatalf("archived parent: archived %v status %s session %+v; want review with no live run", got.Archived, got.Status, got.Session)
	}
	if k := get(t, d, kid.ID); k.Archived || k.Status != core.StatusInProgress || k.Session == nil || k.Session.State != core.SessionRunning {
		t.Fatalf("child after its parent's archive: %+v", k)
	}
}
