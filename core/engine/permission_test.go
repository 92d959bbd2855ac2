package engine

import (
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kandev/kandev/core"
)

func TestKandevToolName(t *testing.T) {
	for _, c := range []struct {
		title, kind string
		want        string
	}{
		{"mcp__kandev__create_task_kandev", "other", "create_task_kandev"},
		{"kandev: list_tasks_kandev", "", "list_tasks_kandev"},
		{"kandev.message_task_kandev", "", "message_task_kandev"},
		{"kandev/stop_task_kandev", "", "stop_task_kandev"},
		{"ask_user_question_kandev (kandev MCP Server)", "other", "ask_user_question_kandev"},
		{"create_task_kandev", "", "create_task_kandev"},
		// Not kandev's: another server, an unknown tool, a shell command
		// that mentions a tool, a call that acts on the machine.
		{"mcp__other__create_task_kandev", "other", ""},
		{"mcp__kandev__rm_rf_kandev", "other", ""},
		{"echo create_task_kandev && rm -rf /", "execute", ""},
		{"create_task_kandev", "execute", ""},
		{"mcp__kandev__create_task_kandev", "edit", ""},
	} {
		got, ok := kandevToolName(core.PermissionTool{Title: c.title, Kind: c.kind})
		if got != c.want || ok != (c.want != "") {
			t.Errorf("kandevToolName(%q, %q) = %q, %v; want %q", c.title, c.kind, got, ok, c.want)
		}
	}
}

func TestToolKey(t *testing.T) {
	for _, c := range []struct{ kind, title, want string }{
		{"execute", "rm -rf build/", "kind:execute"},
		{"edit", "main.go", "kind:edit"},
		{"other", "fetch the page", "title:fetch the page"},
		{"", "mystery", "title:mystery"},
	} {
		if got := toolKey(core.PermissionTool{Kind: c.kind, Title: c.title}); got != c.want {
			t.Errorf("toolKey(%q, %q) = %q, want %q", c.kind, c.title, got, c.want)
		}
	}
}

// Agent-supplied text is cleaned of terminal controls and bounded before
// it becomes a question.
func TestPermissionToolIsCleanedAndBounded(t *testing.T) {
	title := "rm \x1b]52;c;ZXZpbA==\x07-rf\x1b[2J \u202ebuild/" + strings.Repeat("x", 500)
	req := acp.RequestPermissionRequest{ToolCall: acp.ToolCallUpdate{ToolCallId: "c1", Title: &title,
		RawInput: map[string]any{"command": "echo \x1b[31mred\nline2", "blob": strings.Repeat("y", 5000)}}}
	tool := permissionTool(req, nil)
	for _, s := range []string{tool.Title, tool.Input} {
		if strings.ContainsAny(s, "\x1b\x07\u202e\n") {
			t.Errorf("control characters left in %q", s)
		}
	}
	if !strings.HasPrefix(tool.Title, "rm -rf build/") || len([]rune(tool.Title)) > permissionTitleMax+1 {
		t.Errorf("title %q (%d runes)", tool.Title[:40], len([]rune(tool.Title)))
	}
	if len(tool.Input) > core.PermissionInputMax+len("…") || !strings.HasSuffix(tool.Input, "…") {
		t.Errorf("input not bounded: %d bytes", len(tool.Input))
	}
	// Announced by an earlier tool_call: its title and kind are used.
	tool = permissionTool(acp.RequestPermissionRequest{ToolCall: acp.ToolCallUpdate{ToolCallId: "c2"}},
		map[string]any{"title": "go test ./...", "kind": "execute"})
	if tool.Title != "go test ./..." || tool.Kind != "execute" {
		t.Errorf("announced call: %+v", tool)
	}
}
