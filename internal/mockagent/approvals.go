package mockagent

import (
	"encoding/json"
	"strings"

	acp "github.com/coder/acp-go-sdk"
)

// Real agents' ways of asking permission and of reporting what they then
// ran, each one a directive or switch a test can turn on (issue 21).

// codexExecOptions are what codex-acp offers for a command it wants to run.
var codexExecOptions = []acp.PermissionOption{
	{Kind: acp.PermissionOptionKindAllowOnce, Name: "Yes, proceed", OptionId: "approved"},
	{Kind: acp.PermissionOptionKindAllowAlways, Name: "Yes, and don't ask again for this command", OptionId: "approved-for-session"},
	{Kind: acp.PermissionOptionKindRejectOnce, Name: "No, and tell Codex what to do differently", OptionId: "abort"},
}

// codexExec runs `mock: exec COMMAND` the way codex-acp runs a command
// that needs approval: the permission request itself carries the call
// (status pending, title, kind execute, raw input), no tool_call before
// it; once approved, a tool_call with the same id announces the command
// as it starts (in_progress), and an update completes it. Rejected, the
// call is updated failed.
func (t *turn) codexExec(command string) error {
	if command == "" {
		command = "true"
	}
	id := t.nextToolCallID()
	raw := map[string]any{"command": strings.Fields(command), "cwd": t.s.state.Cwd}
	resp, err := t.a.conn.RequestPermission(t.ctx, acp.RequestPermissionRequest{
		SessionId: t.sid,
		ToolCall: acp.ToolCallUpdate{ToolCallId: id, Title: acp.Ptr(command), Kind: acp.Ptr(acp.ToolKindExecute),
			Status: acp.Ptr(acp.ToolCallStatusPending), RawInput: raw},
		Options: codexExecOptions,
	})
	if err != nil {
		if t.ctx.Err() != nil {
			return t.ctx.Err()
		}
		t.sayf("error permission: %v", err)
		return nil
	}
	sel := resp.Outcome.Selected
	if sel == nil || !strings.HasPrefix(string(sel.OptionId), "approved") {
		t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusFailed)))
		t.say("exec: rejected")
		return nil
	}
	t.update(acp.StartToolCall(id, command,
		acp.WithStartKind(acp.ToolKindExecute),
		acp.WithStartStatus(acp.ToolCallStatusInProgress),
		acp.WithStartRawInput(raw)))
	t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusCompleted)))
	t.sayf("exec: ran %s", command)
	return nil
}

// qwenMCPPermission is how Qwen Code 0.15 asks before it calls an MCP
// tool (KANDEV_MOCK_MCP_PERMISSION=qwen): the request's title is the
// call's arguments as JSON, its kind is other, and the tool's name shows
// only in the options' labels. It reports whether the call may go on.
func (t *turn) qwenMCPPermission(id acp.ToolCallId, tool string, args []byte) (bool, error) {
	sel, err := t.qwenAsk(id, tool, kandevServerName, args)
	return strings.HasPrefix(sel, "proceed"), err
}

// qwenAsk sends Qwen Code's permission request for tool on server and
// returns the option chosen ("" when cancelled).
func (t *turn) qwenAsk(id acp.ToolCallId, tool, server string, args []byte) (string, error) {
	var input map[string]any
	_ = json.Unmarshal(args, &input)
	resp, err := t.a.conn.RequestPermission(t.ctx, acp.RequestPermissionRequest{
		SessionId: t.sid,
		ToolCall: acp.ToolCallUpdate{ToolCallId: id, Title: acp.Ptr(string(args)), Kind: acp.Ptr(acp.ToolKindOther),
			Status: acp.Ptr(acp.ToolCallStatusPending), RawInput: input},
		Options: []acp.PermissionOption{
			{Kind: acp.PermissionOptionKindAllowOnce, Name: "Allow", OptionId: "proceed_once"},
			{Kind: acp.PermissionOptionKindAllowAlways, Name: "Always Allow in project: " + tool, OptionId: "proceed_always_project"},
			{Kind: acp.PermissionOptionKindAllowAlways, Name: "Always Allow in project: " + server + " (all tools)", OptionId: "proceed_always_server"},
			{Kind: acp.PermissionOptionKindRejectOnce, Name: "Reject", OptionId: "cancel"},
		},
	})
	if err != nil {
		return "", err
	}
	if sel := resp.Outcome.Selected; sel != nil {
		return string(sel.OptionId), nil
	}
	return "", nil
}

// qwenPermission runs `mock: qwenpermission TOOL {json}`: Qwen Code's
// request before a call of another server's MCP tool, and the outcome said
// as `permission: ID` (or `permission: cancelled`). It calls nothing.
func (t *turn) qwenPermission(arg string) error {
	tool, rawArgs := splitVerb(arg)
	args, err := parseArgs(rawArgs)
	if tool == "" || err != nil {
		t.sayf("error mock: qwenpermission: want %q, got %q", "qwenpermission TOOL {json}", arg)
		return nil
	}
	sel, err := t.qwenAsk(t.nextToolCallID(), tool, "docs", args)
	if err != nil {
		if t.ctx.Err() != nil {
			return t.ctx.Err()
		}
		t.sayf("error permission: %v", err)
		return nil
	}
	if sel == "" {
		sel = "cancelled"
	}
	t.sayf("permission: %s", sel)
	return nil
}
