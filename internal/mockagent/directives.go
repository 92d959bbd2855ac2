package mockagent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// garbageLine is what `mock: garbage` puts on the ACP stream: a line that is
// not JSON-RPC, to exercise the client's parser.
const garbageLine = "this is not json\n"

// crashExitCode is the status `mock: crash` exits with.
const crashExitCode = 3

// exec runs one directive (the text after "mock:"). It returns non-nil only
// to end the turn; mistakes in a directive are reported in the transcript
// and the script goes on.
func (t *turn) exec(d string) error {
	if err := t.ctx.Err(); err != nil {
		return err
	}
	verb, arg := splitVerb(d)
	if verb != "on" {
		// A reaction's directive is expanded when it fires, with the
		// variables of the prompt that fires it.
		arg = expand(arg, t.vars)
	}
	switch verb {
	case "say":
		t.say(arg)
	case "think":
		t.update(acp.UpdateAgentThoughtText(arg))
	case "call":
		return t.call(arg)
	case "calltime":
		return t.calltime(arg)
	case "tools":
		return t.tools()
	case "servers":
		return t.servers()
	case "servercall":
		return t.servercall(arg)
	case "mcpenv":
		t.mcpenv(arg)
	case "env":
		t.env(arg)
	case "http":
		t.http(arg)
	case "fetch":
		t.fetch(arg)
	case "sleep":
		return t.sleep(arg)
	case "chatter":
		return t.chatter(arg)
	case "abandon":
		return t.abandon(arg)
	case "fail":
		return t.fail(arg)
	case "crash":
		return t.crash()
	case "hang":
		<-t.ctx.Done()
		return t.ctx.Err()
	case "garbage":
		if _, err := t.a.out.Write([]byte(garbageLine)); err != nil {
			t.a.logger.Debug("write garbage", "err", err)
		}
	case "stderr":
		fmt.Fprintln(t.a.errOut, arg)
	case "hugeline":
		t.hugeline(arg)
	case "stderrflood":
		t.stderrflood(arg)
	case "burst":
		t.burst(arg)
	case "burst-think":
		t.burstThink(arg)
	case "tool-stream":
		t.toolStream(arg)
	case "stream":
		return t.stream(arg)
	case "waitfile":
		return t.waitFile(arg)
	case "spawn-child":
		t.spawn(false)
	case "spawn-setsid":
		t.spawn(true)
	case "echo":
		t.say("echo: " + t.script.text)
	case "history":
		t.sayf("history: session %s turn %d; earlier: %s", t.sid, t.number, strings.Join(t.earlier, "; "))
	case "permission":
		return t.permission(arg, acp.ToolKindExecute, map[string]any{"command": arg})
	case "mcppermission":
		// As Claude Code asks before an MCP tool: its mcp__SERVER__TOOL
		// name as the title, kind other.
		return t.permission("mcp__kandev__"+arg, acp.ToolKindOther, map[string]any{})
	case "permitted":
		return t.permitted(arg)
	case "exec":
		return t.codexExec(arg)
	case "qwenpermission":
		return t.qwenPermission(arg)
	case "tool":
		t.localTool(arg)
	case "write":
		t.writeFile(arg)
	case "sh":
		return t.shell(arg)
	case "plan":
		t.plan(arg)
	case "usage":
		t.reportUsage(arg)
	case "usage-at-end":
		// Checked now, sent when the turn ends (Gemini CLI, Codex).
		t.atEnd = append(t.atEnd, arg)
	case "flood":
		t.flood(arg)
	case "on":
		t.on(arg)
	case "if":
		return t.cond(arg)
	default:
		t.sayf("error mock: unknown directive %q", d)
	}
	return nil
}

func (t *turn) sleep(arg string) error {
	d, err := time.ParseDuration(arg)
	if err != nil || d < 0 {
		t.sayf("error mock: sleep: invalid duration %q", arg)
		return nil
	}
	return sleep(t.ctx, d)
}

// chatter keeps streaming after whatever came before (a Qwen Code turn
// that goes on talking after ask_parent_question_kandev): a message chunk
// every 100ms for the duration, until the turn is cancelled.
func (t *turn) chatter(arg string) error {
	d, err := time.ParseDuration(arg)
	if err != nil || d < 0 {
		t.sayf("error mock: chatter: invalid duration %q", arg)
		return nil
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	end := time.NewTimer(d)
	defer end.Stop()
	for i := 1; ; i++ {
		select {
		case <-t.ctx.Done():
			return t.ctx.Err()
		case <-end.C:
			return nil
		case <-tick.C:
			t.update(acp.UpdateAgentMessageText(fmt.Sprintf("chatter %d ", i)))
		}
	}
}

// fail ends the turn with a JSON-RPC error carrying the text as message.
func (t *turn) fail(text string) error {
	if text == "" {
		text = "mock failure"
	}
	return &acp.RequestError{Code: -32603, Message: text}
}

// crash stops all output first so that, whatever the exit hook does,
// nothing more reaches the client.
func (t *turn) crash() error {
	t.a.out.sever()
	t.a.exit(crashExitCode)
	return errCrashed
}

// permissionOptions are what the mock offers, as Claude Code does: allow
// once, allow always, reject.
var permissionOptions = []acp.PermissionOption{
	{Kind: acp.PermissionOptionKindAllowOnce, Name: "Allow once", OptionId: "allow"},
	{Kind: acp.PermissionOptionKindAllowAlways, Name: "Allow always", OptionId: "allow-always"},
	{Kind: acp.PermissionOptionKindRejectOnce, Name: "Reject", OptionId: "reject"},
}

// permission asks the client's permission for a tool call and says the
// outcome it got, so a test sees what reached the agent.
func (t *turn) permission(title string, kind acp.ToolKind, input map[string]any) error {
	id := t.nextToolCallID()
	resp, err := t.a.conn.RequestPermission(t.ctx, acp.RequestPermissionRequest{
		SessionId: t.sid,
		ToolCall: acp.ToolCallUpdate{ToolCallId: id, Title: acp.Ptr(title), Kind: acp.Ptr(kind),
			RawInput: input},
		Options: permissionOptions,
	})
	if err != nil {
		if t.ctx.Err() != nil {
			return t.ctx.Err()
		}
		t.sayf("error permission: %v", err)
		return nil
	}
	if sel := resp.Outcome.Selected; sel != nil {
		t.sayf("permission: %s", sel.OptionId)
	} else {
		t.say("permission: cancelled")
	}
	return nil
}

// permitted runs a local tool call that is announced only in its
// permission request, as Qwen Code does: no tool_call update carries its
// title; once allowed, it is reported completed by id alone.
func (t *turn) permitted(title string) error {
	if title == "" {
		title = "mock tool"
	}
	id := t.nextToolCallID()
	resp, err := t.a.conn.RequestPermission(t.ctx, acp.RequestPermissionRequest{
		SessionId: t.sid,
		ToolCall:  acp.ToolCallUpdate{ToolCallId: id, Title: acp.Ptr(title), Kind: acp.Ptr(acp.ToolKindExecute)},
		Options: []acp.PermissionOption{
			{Kind: acp.PermissionOptionKindAllowOnce, Name: "Allow", OptionId: "allow"},
			{Kind: acp.PermissionOptionKindRejectOnce, Name: "Reject", OptionId: "reject"},
		},
	})
	if err != nil {
		if t.ctx.Err() != nil {
			return t.ctx.Err()
		}
		t.sayf("error permission: %v", err)
		return nil
	}
	status := acp.ToolCallStatusCompleted
	if sel := resp.Outcome.Selected; sel == nil || sel.OptionId != "allow" {
		status = acp.ToolCallStatusFailed
	}
	t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(status)))
	return nil
}

// localTool reports a tool call the agent "ran" itself, without MCP.
func (t *turn) localTool(title string) {
	if title == "" {
		title = "mock tool"
	}
	id := t.nextToolCallID()
	t.update(acp.StartToolCall(id, title,
		acp.WithStartKind(acp.ToolKindExecute),
		acp.WithStartStatus(acp.ToolCallStatusInProgress)))
	t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusCompleted)))
}

// writeFile is `mock: write PATH TEXT`: an edit, as a coding agent makes
// one. PATH is relative to the session's directory; TEXT (with \n for a
// line break) and a final newline replace the file's content.
func (t *turn) writeFile(arg string) {
	rel, text, _ := strings.Cut(strings.TrimSpace(arg), " ")
	if rel == "" || filepath.IsAbs(rel) || !filepath.IsLocal(rel) {
		t.sayf("error write: %q is not a path inside the session's directory", rel)
		return
	}
	dir := t.s.state.Cwd
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			t.sayf("error write: %v", err)
			return
		}
		dir = wd
	}
	id := t.nextToolCallID()
	t.update(acp.StartToolCall(id, "write "+rel,
		acp.WithStartKind(acp.ToolKindEdit),
		acp.WithStartStatus(acp.ToolCallStatusInProgress)))
	path := filepath.Join(dir, rel)
	body := strings.ReplaceAll(text, `\n`, "\n") + "\n"
	err := os.MkdirAll(filepath.Dir(path), 0o755)
	if err == nil {
		err = os.WriteFile(path, []byte(body), 0o644)
	}
	if err != nil {
		t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusFailed)))
		t.sayf("error write: %v", err)
		return
	}
	t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusCompleted)))
	t.sayf("wrote %s", rel)
}

func (t *turn) plan(arg string) {
	entries := []acp.PlanEntry{}
	for _, e := range strings.Split(arg, "|") {
		if e = strings.TrimSpace(e); e != "" {
			entries = append(entries, acp.PlanEntry{
				Content:  e,
				Priority: acp.PlanEntryPriorityMedium,
				Status:   acp.PlanEntryStatusPending,
			})
		}
	}
	// Built by hand: UpdatePlan() with no entries would send null.
	t.update(acp.SessionUpdate{Plan: &acp.SessionUpdatePlan{Entries: entries}})
}

// cond runs `if KEY=VALUE: DIRECTIVE`: the directive runs only when the
// prompt's variable KEY equals VALUE (a reaction that must branch, such as
// handing back once no subtask is open, uses it).
func (t *turn) cond(arg string) error {
	test, rest, ok := strings.Cut(arg, ": ")
	key, want, ok2 := strings.Cut(test, "=")
	if !ok || !ok2 || strings.TrimSpace(rest) == "" {
		t.sayf("error mock: if: want %q, got %q", "if KEY=VALUE: DIRECTIVE", arg)
		return nil
	}
	if t.vars[strings.TrimSpace(key)] != strings.TrimSpace(want) {
		return nil
	}
	return t.exec(rest)
}

// on registers a reaction; it is saved with the session at the turn's end.
func (t *turn) on(arg string) {
	r, ok := parseReaction(arg)
	if !ok {
		t.sayf("error mock: on: want %q, got %q", "on KIND: DIRECTIVE", arg)
		return
	}
	t.s.state.Reactions = append(t.s.state.Reactions, r)
}

// mcpenv says one environment value of the kandev MCP server the session
// was given: `mcpenv NAME: VALUE`. It exists for tests (it can reveal the
// session token).
func (t *turn) mcpenv(name string) {
	srv := t.s.client().server
	if srv == nil {
		t.say("error mcpenv: this session has no kandev MCP server")
		return
	}
	for _, e := range srv.Env {
		if e.Name == name {
			t.sayf("mcpenv %s: %s", name, e.Value)
			return
		}
	}
	t.sayf("error mcpenv: the kandev MCP server has no %s in its environment", name)
}
