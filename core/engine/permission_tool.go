package engine

// Which tool a permission request is for: its kind, its key for an
// "always" answer, and whether it is one of kandev's own MCP tools.

import (
	"encoding/json"
	"strings"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/core/textsafe"
)

// permissionTool cleans and bounds what the request says about its tool
// call: agents are untrusted input, and this text reaches terminals.
func permissionTool(req acp.RequestPermissionRequest, announced map[string]any) core.PermissionTool {
	tc := req.ToolCall
	t := core.PermissionTool{CallID: truncateRunes(textsafe.Line(string(tc.ToolCallId)), permissionOptionMax)}
	if tc.Title != nil {
		t.Title = *tc.Title
	} else if s, _ := announced["title"].(string); s != "" {
		t.Title = s
	}
	if tc.Kind != nil {
		t.Kind = string(*tc.Kind)
	} else if s, _ := announced["kind"].(string); s != "" {
		t.Kind = s
	}
	raw := tc.RawInput
	if raw == nil {
		raw = announced["raw_input"]
	}
	if raw != nil {
		if b, err := json.Marshal(raw); err == nil {
			in := textsafe.Line(string(b))
			if len(in) > core.PermissionInputMax {
				in = strings.ToValidUTF8(in[:core.PermissionInputMax], "") + "…"
			}
			t.Input = in
		}
	}
	t.Title = truncateRunes(textsafe.Line(t.Title), permissionTitleMax)
	t.Kind = truncateRunes(textsafe.Line(t.Kind), permissionOptionMax)
	if t.Title == "" {
		t.Title = "(untitled tool call)"
	}
	return t
}

// toolKey is what an "allow always" is remembered by, for the rest of the
// task: a call of an MCP tool by that tool ("mcp:NAME"), whatever its
// arguments (Qwen Code titles the request with them); any other call by
// its ACP tool kind ("kind:execute", "kind:edit"...), or, for a call of
// kind "other" or none (which says nothing about what it does), by its
// exact title ("title:rm -rf build/").
func toolKey(req acp.RequestPermissionRequest, t core.PermissionTool) string {
	if !actsOnMachine(t.Kind) {
		if _, tool := mcpToolOf(req, t); tool != "" {
			return "mcp:" + tool
		}
	}
	if t.Kind != "" && t.Kind != string(acp.ToolKindOther) {
		return "kind:" + t.Kind
	}
	return "title:" + t.Title
}

// actsOnMachine is true for the ACP kinds that change the machine: a call
// of one of them is never taken for an MCP tool, whatever it is called.
func actsOnMachine(kind string) bool {
	switch acp.ToolKind(kind) {
	case acp.ToolKindExecute, acp.ToolKindEdit, acp.ToolKindDelete, acp.ToolKindMove:
		return true
	}
	return false
}

// kandevToolName recognises a request for one of kandev's own MCP tools,
// which never needs a person's permission, from whatever signal the agent
// gives (mcpToolOf): the tool must be one kandev registers, on no server
// but kandev. A call of a kind that acts on the machine (execute, edit,
// delete, move) is never taken for one, whatever it says.
func kandevToolName(req acp.RequestPermissionRequest, t core.PermissionTool) (string, bool) {
	if actsOnMachine(t.Kind) {
		return "", false
	}
	server, tool := mcpToolOf(req, t)
	if server != "" && server != kandevServer {
		return "", false
	}
	if _, ok := capability.Lookup(tool); ok {
		return tool, true
	}
	return "", false
}

// kandevServer is the name of the MCP server kandev gives every agent.
const kandevServer = "kandev"

// mcpToolOf reads which MCP tool (and, when said, which server) a
// permission request is for, from every signal the five agents give, in
// this order:
//   - the title, in the forms agents show an MCP tool in:
//     "mcp__SERVER__NAME" (Claude Code), "NAME (SERVER MCP Server)" (Gemini
//     CLI, Qwen Code), "Tool: SERVER/NAME" (Codex), "kandev.NAME",
//     "kandev/NAME", "kandev: NAME" (the mock), "kandev__NAME", or a name
//     kandev registers alone;
//   - the raw input and the _meta: a tool name under "tool", "tool_name",
//     "toolName", "mcp_tool" or "name" (beside a server under "server",
//     "server_name", "serverName"), at the top or one object down (Codex's
//     invocation);
//   - the options' labels (Qwen Code 0.15 titles the request with the
//     call's arguments and names the tool only in "Always Allow in
//     project: NAME"): of a label that starts "Always Allow", the last
//     ": " part, when it is one word.
//
// It returns "" for the tool when no signal names one.
func mcpToolOf(req acp.RequestPermissionRequest, t core.PermissionTool) (server, tool string) {
	if server, tool = mcpTitle(t.Title); tool != "" {
		return server, tool
	}
	for _, v := range []any{req.ToolCall.RawInput, map[string]any(req.ToolCall.Meta), map[string]any(req.Meta)} {
		if server, tool = mcpFields(v, 1); tool != "" {
			return server, tool
		}
	}
	for _, o := range req.Options {
		label := strings.TrimSpace(string(o.Name))
		i := strings.LastIndex(label, ": ")
		if i < 0 || !strings.HasPrefix(strings.ToLower(label), "always allow") {
			continue
		}
		if name := strings.TrimSpace(label[i+2:]); isToolWord(name) {
			if server, tool = mcpTitle(name); tool != "" {
				return server, tool
			}
			return "", name
		}
	}
	return "", ""
}

// mcpTitle reads a title in one of the forms agents show an MCP tool in.
func mcpTitle(title string) (server, tool string) {
	title = strings.TrimSpace(title)
	if rest, ok := strings.CutPrefix(title, "mcp__"); ok {
		if s, n, ok := strings.Cut(rest, "__"); ok && isToolWord(s) && isToolWord(n) {
			return s, n
		}
		return "", ""
	}
	if rest, ok := strings.CutSuffix(title, " MCP Server)"); ok {
		if i := strings.LastIndex(rest, " ("); i > 0 {
			n, s := strings.TrimSpace(rest[:i]), strings.TrimSpace(rest[i+2:])
			if isToolWord(n) && s != "" {
				return s, n
			}
		}
		return "", ""
	}
	if rest, ok := strings.CutPrefix(title, "Tool: "); ok {
		if s, n, ok := strings.Cut(strings.TrimSpace(rest), "/"); ok && isToolWord(s) && isToolWord(n) {
			return s, n
		}
		return "", ""
	}
	for _, p := range []string{"kandev__", "kandev.", "kandev/", "kandev:"} {
		if rest, ok := strings.CutPrefix(title, p); ok {
			if n := strings.TrimSpace(rest); isToolWord(n) {
				return kandevServer, n
			}
			return "", ""
		}
	}
	if _, ok := capability.Lookup(title); ok {
		return "", title
	}
	return "", ""
}

// mcpFields looks for a tool name (and its server) in an agent's raw
// input or _meta, depth objects down at most.
func mcpFields(v any, depth int) (server, tool string) {
	m, ok := v.(map[string]any)
	if !ok || m == nil {
		return "", ""
	}
	str := func(keys ...string) string {
		for _, k := range keys {
			if s, ok := m[k].(string); ok && isToolWord(strings.TrimSpace(s)) {
				return strings.TrimSpace(s)
			}
		}
		return ""
	}
	if tool = str("tool", "tool_name", "toolName", "mcp_tool", "mcpTool", "name"); tool != "" {
		return str("server", "server_name", "serverName", "mcp_server", "mcpServer"), tool
	}
	if depth > 0 {
		for _, k := range []string{"invocation", "mcp", "tool_call", "toolCall"} {
			if server, tool = mcpFields(m[k], depth-1); tool != "" {
				return server, tool
			}
		}
	}
	return "", ""
}

// isToolWord is true for a plausible MCP tool or server name: one word of
// letters, digits, '_', '-' and '.', at most 128 bytes.
func isToolWord(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
		default:
			return false
		}
	}
	return true
}
