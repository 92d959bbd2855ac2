package mockagent

import (
	"errors"
	"os"
	"os/exec"
	"strings"

	acp "github.com/coder/acp-go-sdk"
)

// shellOutputMax bounds what `mock: sh` says of a command's output.
const shellOutputMax = 4 << 10

// shell is `mock: sh COMMAND`: the agent's own shell tool, as a coding
// agent runs one. It reports a tool call of kind execute, asks the
// client's permission for it (the policy decides, as for any agent's
// tool), and once allowed runs COMMAND with /bin/sh -c in the session's
// directory, then says `sh: OUTPUT` (stdout and stderr, trimmed, at most
// 4 KiB) and `sh exit: N`. Tests use it to try what an agent's tools can
// reach, in a sandbox or not.
func (t *turn) shell(command string) error {
	command = strings.TrimSpace(command)
	if command == "" {
		t.say("error sh: no command")
		return nil
	}
	id := t.nextToolCallID()
	input := map[string]any{"command": command}
	t.update(acp.StartToolCall(id, command, acp.WithStartKind(acp.ToolKindExecute),
		acp.WithStartStatus(acp.ToolCallStatusPending), acp.WithStartRawInput(input)))
	resp, err := t.a.conn.RequestPermission(t.ctx, acp.RequestPermissionRequest{
		SessionId: t.sid,
		ToolCall: acp.ToolCallUpdate{ToolCallId: id, Title: acp.Ptr(command), Kind: acp.Ptr(acp.ToolKindExecute),
			RawInput: input},
		Options: permissionOptions,
	})
	if err != nil {
		if t.ctx.Err() != nil {
			return t.ctx.Err()
		}
		t.sayf("error sh: permission: %v", err)
		return nil
	}
	if sel := resp.Outcome.Selected; sel == nil || (sel.OptionId != "allow" && sel.OptionId != "allow-always") {
		outcome := "cancelled"
		if sel != nil {
			outcome = string(sel.OptionId)
		}
		t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusFailed)))
		t.sayf("sh: not run (permission: %s)", outcome)
		t.say("sh exit: -1")
		return nil
	}
	t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusInProgress)))
	dir := t.s.state.Cwd
	if dir == "" {
		dir, _ = os.Getwd()
	}
	cmd := exec.CommandContext(t.ctx, "/bin/sh", "-c", command)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		code = -1
		out = append(out, []byte(err.Error())...)
	}
	if t.ctx.Err() != nil {
		return t.ctx.Err()
	}
	text := strings.TrimSpace(string(out))
	if len(text) > shellOutputMax {
		text = strings.ToValidUTF8(text[:shellOutputMax], "") + "…"
	}
	status := acp.ToolCallStatusCompleted
	if code != 0 {
		status = acp.ToolCallStatusFailed
	}
	t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(status)))
	t.sayf("sh: %s", text)
	t.sayf("sh exit: %d", code)
	return nil
}
