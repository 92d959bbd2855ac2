package mcpserve_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kandev/kandev/core/daemon/daemontest"
)

// TestListTasksPageOnce: through a real kandev mcp, list_tasks_kandev
// answers a page of the listing (the limit is honoured and next_cursor
// leads on), once as data: the structured content holds the tasks, and
// the text lists them one per line instead of repeating the JSON.
func TestListTasksPageOnce(t *testing.T) {
	d := daemontest.Start(t)
	for i := range 5 {
		d.MustRun("task", "create", fmt.Sprintf("listed %d", i), "--cwd", t.TempDir())
	}
	c := mcpClient(t, d.Bin, "KANDEV_HOME="+d.Home.Dir)
	res := callTool(t, c, "list_tasks_kandev", map[string]any{"limit": 2})
	if res.IsError {
		t.Fatalf("list: %+v", res)
	}
	page := structured(t, res)
	tasks := page["tasks"].([]any)
	if len(tasks) != 2 || page["next_cursor"] != tasks[1].(map[string]any)["id"] {
		t.Fatalf("first page of 2: %v", page)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%d content blocks, want one text block", len(res.Content))
	}
	text := res.Content[0].(mcp.TextContent).Text
	if strings.Contains(text, `"tasks"`) || strings.Contains(text, "{") {
		t.Fatalf("the text repeats the JSON:\n%s", text)
	}
	for _, tk := range tasks {
		m := tk.(map[string]any)
		if line := fmt.Sprintf("%s [%s] %s", m["id"], m["status"], m["title"]); !strings.Contains(text, line) {
			t.Fatalf("the text lacks %q:\n%s", line, text)
		}
	}
	if !strings.Contains(text, fmt.Sprintf("cursor %q", page["next_cursor"])) {
		t.Fatalf("the text does not say how to get the next page:\n%s", text)
	}
	last := structured(t, callTool(t, c, "list_tasks_kandev", map[string]any{"limit": 10, "cursor": page["next_cursor"]}))
	if n := len(last["tasks"].([]any)); n != 3 || last["next_cursor"] != nil {
		t.Fatalf("the rest: %d tasks, next_cursor %v", n, last["next_cursor"])
	}
}
