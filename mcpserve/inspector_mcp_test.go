package mcpserve_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// The official MCP Inspector CLI (@modelcontextprotocol/inspector 0.15.0,
// pinned in testdata/inspector and installed by `make inspector`) talks to
// a live `kandev mcp`: a third-party client, not ours, agrees with the
// bridge on the protocol.

func inspectorCLI(t *testing.T) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("testdata", "inspector", "node_modules", ".bin", "mcp-inspector"))
	if err != nil {
		t.Fatal(err)
	}
	_, statErr := os.Stat(path)
	_, nodeErr := exec.LookPath("node")
	if statErr != nil || nodeErr != nil {
		why := "the MCP Inspector CLI is not installed (run `make inspector`, which needs node and npm)"
		if os.Getenv("CI") != "" {
			t.Fatalf("%s: %v %v", why, statErr, nodeErr)
		}
		t.Skip(why)
	}
	return path
}

// inspect runs the inspector CLI against `kandev mcp` with env passed to
// the server, and decodes what it prints.
func inspect(t *testing.T, cli, bin string, env []string, args ...string) map[string]any {
	t.Helper()
	argv := []string{"--cli"}
	for _, e := range env {
		argv = append(argv, "-e", e)
	}
	argv = append(argv, bin, "mcp")
	argv = append(argv, args...)
	cmd := exec.Command(cli, argv...)
	// kandev mcp runs where the inspector does: not in the checkout under
	// test, where an external task would get a worktree and a branch.
	cmd.Env, cmd.Dir = cleanEnv(), t.TempDir()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("mcp-inspector %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	var res map[string]any
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("mcp-inspector %s printed %q: %v\nstderr: %s", strings.Join(args, " "), out.String(), err, errb.String())
	}
	return res
}

func inspectedTools(t *testing.T, res map[string]any) []string {
	t.Helper()
	var names []string
	for _, raw := range res["tools"].([]any) {
		tool := raw.(map[string]any)
		names = append(names, tool["name"].(string))
		ann, _ := tool["annotations"].(map[string]any)
		if ann["openWorldHint"] != false {
			t.Errorf("%s: annotations %v", tool["name"], ann)
		}
	}
	slices.Sort(names)
	return names
}

func TestInspectorCLI(t *testing.T) {
	cli := inspectorCLI(t)
	d := daemontest.Start(t)

	t.Run("external surface", func(t *testing.T) {
		env := []string{"KANDEV_HOME=" + d.Home.Dir}
		got := inspectedTools(t, inspect(t, cli, d.Bin, env, "--method", "tools/list"))
		if want := capability.Resolve(capability.Case{Surface: capability.External}).Names(); !slices.Equal(got, want) {
			t.Fatalf("tools/list: %v, want %v", got, want)
		}
		res := inspect(t, cli, d.Bin, env, "--method", "tools/call", "--tool-name", "create_task_kandev",
			"--tool-arg", "title=from the inspector", "--tool-arg", "description=made by a third-party MCP client")
		sc, _ := res["structuredContent"].(map[string]any)
		if res["isError"] == true || sc["title"] != "from the inspector" {
			t.Fatalf("create_task_kandev: %v", res)
		}
		if tk := findTask(t, taskList(t, d), "from the inspector"); tk.ID != sc["id"] || tk.CreatedBy != "external" {
			t.Errorf("task list has %+v, the call returned %v", tk, sc)
		}
		res = inspect(t, cli, d.Bin, env, "--method", "tools/call", "--tool-name", "get_task_kandev", "--tool-arg", "task_id=nosuch")
		content := res["content"].([]any)[0].(map[string]any)
		if res["isError"] != true || content["text"] != "NOT_FOUND: task nosuch not found" {
			t.Errorf("get_task_kandev of a missing task: %v", res)
		}
	})

	t.Run("session token", func(t *testing.T) {
		task, err := d.Client.CreateTask(bg(), api.CreateTaskInput{Title: "inspected", Prompt: "mock: mcpenv KANDEV_TOKEN\nmock: hang",
			CWD: t.TempDir(), Start: true})
		if err != nil {
			t.Fatal(err)
		}
		token := waitLine(t, d, task.ID, "mcpenv KANDEV_TOKEN:", 1)
		env := []string{"KANDEV_SOCKET=" + d.Home.Socket(), "KANDEV_TOKEN=" + token}
		got := inspectedTools(t, inspect(t, cli, d.Bin, env, "--method", "tools/list"))
		if want := capability.Resolve(capability.Case{Surface: capability.KanbanTask}).Names(); !slices.Equal(got, want) {
			t.Fatalf("tools/list: %v, want %v", got, want)
		}
		res := inspect(t, cli, d.Bin, env, "--method", "tools/call", "--tool-name", "get_task_kandev")
		if sc, _ := res["structuredContent"].(map[string]any); res["isError"] == true || sc["id"] != task.ID {
			t.Fatalf("get_task_kandev as the task's session: %v", res)
		}
	})
}
