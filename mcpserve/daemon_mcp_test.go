package mcpserve_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/core/daemon/daemontest"
	"github.com/kandev/kandev/core/daemonclient"
)

// These tests run real processes: the kandev daemon, the mock agent it
// launches, and the `kandev mcp` bridge between them.

func TestMain(m *testing.M) { daemontest.Main(m) }

const waitLong = 60 * time.Second

func bg() context.Context { return context.Background() }

// agentLines is every line the task's agent said, in order.
func agentLines(t testing.TB, d *daemontest.Daemon, taskID string) []string {
	t.Helper()
	var lines []string
	for _, m := range d.Conversation(t, taskID) {
		if m.Kind == core.MsgAgent {
			for _, l := range strings.Split(m.Text, "\n") {
				if l = strings.TrimSpace(l); l != "" {
					lines = append(lines, l)
				}
			}
		}
	}
	return lines
}

// waitLine waits until the agent has said n lines starting with prefix and
// returns the nth, without the prefix.
func waitLine(t testing.TB, d *daemontest.Daemon, taskID, prefix string, n int) string {
	t.Helper()
	var found []string
	daemontest.Eventually(t, waitLong, "task "+taskID+" to say "+prefix, func() bool {
		found = found[:0]
		for _, l := range agentLines(t, d, taskID) {
			if rest, ok := strings.CutPrefix(l, prefix); ok {
				found = append(found, strings.TrimSpace(rest))
			}
		}
		return len(found) >= n
	})
	return found[n-1]
}

func toolList(s string) []string {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// cleanEnv is the test's environment without any kandev session of its own
// (the tests may run inside a kandev agent), plus kv.
func cleanEnv(kv ...string) []string {
	var env []string
	for _, e := range os.Environ() {
		if strings.HasPrefix(e, "KANDEV_") {
			continue
		}
		env = append(env, e)
	}
	return append(env, kv...)
}

// runMCP runs `kandev mcp` with stdin and extra environment.
func runMCP(t *testing.T, d *daemontest.Daemon, stdin string, kv ...string) daemontest.Result {
	t.Helper()
	return d.RunEnv(cleanEnv(kv...), stdin, "mcp")
}

// mcpClient starts `kandev mcp` as an MCP client would and initializes it.
func mcpClient(t *testing.T, bin string, kv ...string) *client.Client {
	t.Helper()
	// The transport appends to os.Environ; empty values override any
	// session of the test's own.
	env := append([]string{"KANDEV_TOKEN=", "KANDEV_SOCKET=", "KANDEV_HOME="}, kv...)
	// Not this package's directory: a task created on the external surface
	// works where kandev mcp runs, and here that would be a worktree and a
	// branch in the checkout under test.
	dir := t.TempDir()
	c, err := client.NewStdioMCPClientWithOptions(bin, env, []string{"mcp"},
		transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Env, cmd.Dir = append(os.Environ(), env...), dir
			return cmd, nil
		}))
	if err != nil {
		t.Fatalf("start kandev mcp: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(bg(), waitLong)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "kandev-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize kandev mcp: %v", err)
	}
	return c
}

func listNames(t *testing.T, c *client.Client) []string {
	t.Helper()
	res, err := c.ListTools(bg(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

func callTool(t *testing.T, c *client.Client, name string, args any) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(bg(), req)
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	var m map[string]any
	raw := res.RawStructuredContent
	if len(raw) == 0 {
		raw, _ = json.Marshal(res.StructuredContent)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("structured content %s: %v", raw, err)
	}
	return m
}

type listedTask struct {
	ID        string  `json:"id"`
	Title     string  `json:"title"`
	ParentID  *string `json:"parent_id"`
	Autopilot bool    `json:"autopilot"`
	CreatedBy string  `json:"created_by"`
}

// taskList is `kandev task list --json`.
func taskList(t *testing.T, d *daemontest.Daemon) []listedTask {
	t.Helper()
	var tasks []listedTask
	if err := json.Unmarshal([]byte(d.MustRun("task", "list", "--json")), &tasks); err != nil {
		t.Fatalf("task list --json: %v", err)
	}
	return tasks
}

func findTask(t *testing.T, tasks []listedTask, title string) listedTask {
	t.Helper()
	for _, tk := range tasks {
		if tk.Title == title {
			return tk
		}
	}
	t.Fatalf("no task titled %q in %+v", title, tasks)
	return listedTask{}
}

// `mock: tools` from a real agent reports exactly the registry's list for
// its case, and the same after a crash of the daemon and a restart.
func TestAgentSeesItsCaseTools(t *testing.T) {
	d := daemontest.Start(t)
	cwd := t.TempDir()
	create := func(in api.CreateTaskInput) core.Task {
		t.Helper()
		in.CWD = cwd
		tk, err := d.Client.CreateTask(bg(), in)
		if err != nil {
			t.Fatalf("create %+v: %v", in, err)
		}
		return tk
	}
	parent := create(api.CreateTaskInput{Title: "parent"})
	cases := []struct {
		name string
		task core.Task
		c    capability.Case
	}{
		{"normal task", create(api.CreateTaskInput{Title: "normal", Prompt: "mock: tools", Start: true}),
			capability.Case{Surface: capability.KanbanTask}},
		{"normal child", create(api.CreateTaskInput{Title: "normal child", ParentID: parent.ID, Prompt: "mock: tools", Start: true}),
			capability.Case{Surface: capability.KanbanTask, HasParent: true}},
		{"autopilot child", create(api.CreateTaskInput{Title: "autopilot child", ParentID: parent.ID, Autopilot: true, Prompt: "mock: tools", Start: true}),
			capability.Case{Surface: capability.KanbanTask, Autopilot: true, HasParent: true}},
		{"autopilot root", create(api.CreateTaskInput{Title: "autopilot root", Autopilot: true, Prompt: "mock: tools", Start: true}),
			capability.Case{Surface: capability.KanbanTask, Autopilot: true}},
		// No title: a placeholder the agent should replace (title group on).
		{"untitled task", create(api.CreateTaskInput{Prompt: "Look around the repository\nmock: tools", Start: true}),
			capability.Case{Surface: capability.KanbanTask, TitlePending: true}},
	}
	check := func(round int) {
		for _, tc := range cases {
			got := toolList(waitLine(t, d, tc.task.ID, "tools:", round))
			want := capability.Resolve(tc.c).Names()
			if !slices.Equal(got, want) {
				t.Errorf("round %d, %s: the agent sees\n %v\nwant\n %v", round, tc.name, got, want)
			}
		}
	}
	check(1)

	d.Kill9()
	d.Restart()
	for _, tc := range cases {
		if _, err := d.Client.MessageTask(bg(), tc.task.ID, api.MessageInput{Text: "mock: tools"}); err != nil {
			t.Fatalf("message %s after restart: %v", tc.name, err)
		}
	}
	check(2)
}

// A parent's agent creates children through kandev mcp; they appear in
// `kandev task list` with the right parent and autopilot value, and the
// started autopilot child sees the autopilot child's tools.
func TestParentCreatesChildrenThroughMCP(t *testing.T) {
	d := daemontest.Start(t)
	prompt := strings.Join([]string{
		`mock: call create_task_kandev {"title":"child normal","description":"do a part","start":false}`,
		`mock: call create_task_kandev {"title":"child autopilot","autopilot":true,"start":false}`,
		`mock: call create_task_kandev {"title":"child running","autopilot":true,"prompt":"mock: tools"}`,
		`mock: call create_task_kandev {"title":"bad","colour":"blue"}`,
		`mock: call stop_task_kandev {"task_id":"nosuch"}`,
	}, "\n")
	parent, err := d.Client.CreateTask(bg(), api.CreateTaskInput{Title: "parent", Prompt: prompt, CWD: t.TempDir(), Start: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		res := waitLine(t, d, parent.ID, "result create_task_kandev:", i)
		var tk map[string]any
		if err := json.Unmarshal([]byte(res), &tk); err != nil || tk["id"] == "" {
			t.Fatalf("create_task_kandev result %q: %v", res, err)
		}
	}
	bad := waitLine(t, d, parent.ID, "error create_task_kandev:", 1)
	if want := "VALIDATION_ERROR: invalid arguments for create_task_kandev: unknown argument colour"; !strings.HasPrefix(bad, want) {
		t.Errorf("unknown argument: %q, want prefix %q", bad, want)
	}
	if got := waitLine(t, d, parent.ID, "error stop_task_kandev:", 1); got != "NOT_FOUND: task nosuch not found" {
		t.Errorf("stop of a missing task: %q", got)
	}

	tasks := taskList(t, d)
	for _, want := range []struct {
		title     string
		autopilot bool
	}{{"child normal", false}, {"child autopilot", true}, {"child running", true}} {
		tk := findTask(t, tasks, want.title)
		if tk.ParentID == nil || *tk.ParentID != parent.ID {
			t.Errorf("%s: parent_id %v, want %s", want.title, tk.ParentID, parent.ID)
		}
		if tk.Autopilot != want.autopilot {
			t.Errorf("%s: autopilot %v, want %v", want.title, tk.Autopilot, want.autopilot)
		}
		if tk.CreatedBy != "task:"+parent.ID {
			t.Errorf("%s: created_by %q", want.title, tk.CreatedBy)
		}
	}
	for _, tk := range tasks {
		if tk.Title == "bad" {
			t.Error("an invalid call created a task")
		}
	}

	running := findTask(t, tasks, "child running")
	got := toolList(waitLine(t, d, running.ID, "tools:", 1))
	if want := capability.Resolve(capability.Case{Surface: capability.KanbanTask, Autopilot: true, HasParent: true}).Names(); !slices.Equal(got, want) {
		t.Errorf("autopilot child created over MCP sees %v, want %v", got, want)
	}
}

// A token the daemon never minted is refused: by kandev mcp at start, and
// by the HTTP API.
func TestForgedTokenRefused(t *testing.T) {
	d := daemontest.Start(t)
	r := runMCP(t, d, "", "KANDEV_SOCKET="+d.Home.Socket(), "KANDEV_TOKEN=forged-token")
	if r.Code == 0 {
		t.Fatalf("kandev mcp accepted a forged token; stderr %q", r.Stderr)
	}
	if !strings.Contains(r.Stderr, "FORBIDDEN") || !strings.Contains(r.Stderr, "unknown session token") {
		t.Errorf("stderr %q does not say why", r.Stderr)
	}
	if r.Stdout != "" {
		t.Errorf("stdout %q", r.Stdout)
	}
	host := daemonclient.Dial(d.Home.Socket()).WithToken("forged-token")
	defer host.Close()
	if _, err := host.ToolSurface(bg()); core.CodeOf(err) != core.CodeForbidden {
		t.Errorf("GET /v1/mcp/surface with a forged token: %v", err)
	}
	if _, err := host.CallTool(bg(), "create_task_kandev", []byte(`{"title":"x"}`)); core.CodeOf(err) != core.CodeForbidden {
		t.Errorf("POST /v1/mcp/call with a forged token: %v", err)
	}
}

// A session's token works while the session lives and is refused once the
// task is stopped.
func TestRevokedTokenRefused(t *testing.T) {
	d := daemontest.Start(t)
	task, err := d.Client.CreateTask(bg(), api.CreateTaskInput{Title: "revoke me", Prompt: "mock: mcpenv KANDEV_TOKEN\nmock: mcpenv KANDEV_SOCKET\nmock: hang",
		CWD: t.TempDir(), Start: true})
	if err != nil {
		t.Fatal(err)
	}
	token := waitLine(t, d, task.ID, "mcpenv KANDEV_TOKEN:", 1)
	socket := waitLine(t, d, task.ID, "mcpenv KANDEV_SOCKET:", 1)
	if socket != d.Home.MCPSocket() || token == "" {
		t.Fatalf("token %q, socket %q", token, socket)
	}

	// While the session lives (its turn hangs until stopped), the token is
	// the task's identity.
	live := mcpClient(t, d.Bin, "KANDEV_SOCKET="+socket, "KANDEV_TOKEN="+token)
	if got, want := listNames(t, live), capability.Resolve(capability.Case{Surface: capability.KanbanTask}).Names(); !slices.Equal(got, want) {
		t.Fatalf("live token sees %v, want %v", got, want)
	}
	if got := structured(t, callTool(t, live, "get_task_kandev", map[string]any{})); got["id"] != task.ID {
		t.Fatalf("get_task_kandev with no id gets the caller's task: %v", got)
	}

	stop, err := d.Client.StopTask(bg(), task.ID, api.StopTaskInput{})
	if err != nil || stop.Result != "stopped" {
		t.Fatalf("stop: %+v, %v", stop, err)
	}
	r := runMCP(t, d, "", "KANDEV_SOCKET="+socket, "KANDEV_TOKEN="+token)
	if r.Code == 0 || !strings.Contains(r.Stderr, "FORBIDDEN") || !strings.Contains(r.Stderr, "revoked") {
		t.Errorf("kandev mcp with a revoked token: exit %d, stderr %q", r.Code, r.Stderr)
	}
	host := daemonclient.Dial(socket).WithToken(token)
	defer host.Close()
	if _, err := host.ToolSurface(bg()); core.CodeOf(err) != core.CodeForbidden {
		t.Errorf("surface with a revoked token: %v", err)
	}
	if _, err := host.CallTool(bg(), "get_task_kandev", []byte(`{}`)); core.CodeOf(err) != core.CodeForbidden {
		t.Errorf("call with a revoked token: %v", err)
	}
	// The bridge that was already running sees its calls refused.
	res := callTool(t, live, "get_task_kandev", map[string]any{})
	if !res.IsError || !strings.HasPrefix(res.Content[0].(mcp.TextContent).Text, "FORBIDDEN: session token revoked") {
		t.Errorf("call through a running bridge after revocation: %+v", res)
	}
}

// Without a token, kandev mcp serves the external surface of the home's
// daemon: it lists its tools and creates a root task.
func TestExternalSurface(t *testing.T) {
	d := daemontest.Start(t)
	c := mcpClient(t, d.Bin, "KANDEV_HOME="+d.Home.Dir)
	if got, want := listNames(t, c), capability.Resolve(capability.Case{Surface: capability.External}).Names(); !slices.Equal(got, want) {
		t.Fatalf("external surface %v, want %v", got, want)
	}
	res := callTool(t, c, "create_task_kandev", map[string]any{"title": "from outside", "start": false})
	if res.IsError {
		t.Fatalf("create: %+v", res)
	}
	created := structured(t, res)
	tk := findTask(t, taskList(t, d), "from outside")
	if tk.ID != created["id"] || tk.ParentID != nil || tk.CreatedBy != "external" || tk.Autopilot {
		t.Errorf("external task %+v (created %v)", tk, created)
	}
	listed := structured(t, callTool(t, c, "list_tasks_kandev", map[string]any{}))
	if n := len(listed["tasks"].([]any)); n != 1 {
		t.Errorf("list_tasks_kandev: %d tasks", n)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "stop_task_kandev"
	req.Params.Arguments = map[string]any{"task_id": tk.ID}
	if _, err := c.CallTool(bg(), req); err == nil {
		t.Error("the external surface has no stop_task_kandev, yet the call was served")
	}
}

// With no daemon running, the external surface starts one, as every
// client of a kandev home does.
func TestExternalSurfaceStartsTheDaemon(t *testing.T) {
	bin := daemontest.Binary(t)
	home, err := os.MkdirTemp("", "kdx-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	t.Cleanup(func() { stopDaemonOf(t, home) })
	c := mcpClient(t, bin, "KANDEV_HOME="+home)
	if got, want := listNames(t, c), capability.Resolve(capability.Case{Surface: capability.External}).Names(); !slices.Equal(got, want) {
		t.Fatalf("external surface %v, want %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(home, "kandev.sock")); err != nil {
		t.Fatalf("no daemon socket in the home: %v", err)
	}
}

// stopDaemonOf ends the daemon a test's bridge started in home: SIGTERM,
// then wait until it lets go of the home's lock.
func stopDaemonOf(t *testing.T, home string) {
	lock := filepath.Join(home, "daemon.lock")
	b, err := os.ReadFile(lock)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return
	}
	if syscall.Kill(pid, syscall.SIGTERM) != nil {
		return
	}
	f, err := os.Open(lock)
	if err != nil {
		return
	}
	defer f.Close()
	daemontest.Eventually(t, waitLong, "the daemon to stop", func() bool {
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			return false
		}
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return true
	})
}
