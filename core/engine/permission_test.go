package engine

import (
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kandev/kandev/core"
)

func TestKandevToolName(t *testing.T) {
	qwen := []acp.PermissionOption{
		{Kind: acp.PermissionOptionKindAllowOnce, Name: "Allow", OptionId: "proceed_once"},
		{Kind: acp.PermissionOptionKindAllowAlways, Name: "Always Allow in project: handoff_task_kandev", OptionId: "proceed_always_project"},
		{Kind: acp.PermissionOptionKindAllowAlways, Name: "Always Allow in project: kandev (all tools)", OptionId: "proceed_always_server"},
	}
	for _, c := range []struct {
		title, kind string
		raw         any
		meta        map[string]any
		options     []acp.PermissionOption
		want        string
	}{
		{title: "mcp__kandev__create_task_kandev", kind: "other", want: "create_task_kandev"},
		{title: "kandev: list_tasks_kandev", want: "list_tasks_kandev"},
		{title: "kandev.message_task_kandev", want: "message_task_kandev"},
		{title: "kandev/stop_task_kandev", want: "stop_task_kandev"},
		{title: "ask_user_question_kandev (kandev MCP Server)", kind: "other", want: "ask_user_question_kandev"},
		{title: "Tool: kandev/handoff_task_kandev", want: "handoff_task_kandev"},
		{title: "create_task_kandev", want: "create_task_kandev"},
		// Qwen Code 0.15: the arguments as title, the name in a label.
		{title: `{"to":"back"}`, kind: "other", options: qwen, want: "handoff_task_kandev"},
		// The raw input or _meta names it.
		{title: "Approve MCP tool call", raw: map[string]any{"server": "kandev", "tool": "list_tasks_kandev"}, want: "list_tasks_kandev"},
		{title: "Approve MCP tool call", raw: map[string]any{"invocation": map[string]any{"server": "kandev", "tool": "get_task_kandev"}}, want: "get_task_kandev"},
		{title: "a call", kind: "other", meta: map[string]any{"tool_name": "create_task_kandev"}, want: "create_task_kandev"},
		// Not kandev's: another server, an unknown tool, a shell command
		// that mentions a tool, a call that acts on the machine.
		{title: "mcp__other__create_task_kandev", kind: "other"},
		{title: "mcp__kandev__rm_rf_kandev", kind: "other"},
		{title: "Approve MCP tool call", raw: map[string]any{"server": "github", "tool": "create_task_kandev"}},
		{title: "echo create_task_kandev && rm -rf /", kind: "execute"},
		{title: "create_task_kandev", kind: "execute"},
		{title: "mcp__kandev__create_task_kandev", kind: "edit"},
		{title: `{"to":"back"}`, kind: "execute", options: qwen},
		{title: "rm -rf build", kind: "other", options: []acp.PermissionOption{{Name: "Allow: create_task_kandev"}}},
	} {
		req := acp.RequestPermissionRequest{ToolCall: acp.ToolCallUpdate{Title: &c.title, RawInput: c.raw, Meta: c.meta}, Options: c.options}
		got, ok := kandevToolName(req, core.PermissionTool{Title: c.title, Kind: c.kind})
		if got != c.want || ok != (c.want != "") {
			t.Errorf("kandevToolName(%q, %q, raw %v, meta %v) = %q, %v; want %q", c.title, c.kind, c.raw, c.meta, got, ok, c.want)
		}
	}
}

func TestToolKey(t *testing.T) {
	labelled := func(name string) []acp.PermissionOption {
		return []acp.PermissionOption{{Kind: acp.PermissionOptionKindAllowAlways, Name: "Always Allow in project: " + name}}
	}
	for _, c := range []struct {
		kind, title string
		options     []acp.PermissionOption
		want        string
	}{
		{kind: "execute", title: "rm -rf build/", want: "kind:execute"},
		{kind: "edit", title: "main.go", want: "kind:edit"},
		{kind: "other", title: "fetch the page", want: "title:fetch the page"},
		{title: "mystery", want: "title:mystery"},
		// An MCP tool is remembered by the tool, not by its arguments.
		{kind: "other", title: `{"query":"a"}`, options: labelled("search_docs"), want: "mcp:search_docs"},
		{kind: "other", title: `{"query":"b"}`, options: labelled("search_docs"), want: "mcp:search_docs"},
		{kind: "other", title: "mcp__github__search", want: "mcp:search"},
		{kind: "execute", title: "mcp__github__search", want: "kind:execute"},
	} {
		req := acp.RequestPermissionRequest{Options: c.options}
		if got := toolKey(req, core.PermissionTool{Kind: c.kind, Title: c.title}); got != c.want {
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
