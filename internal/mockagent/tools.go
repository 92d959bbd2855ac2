package mockagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/mark3labs/mcp-go/mcp"
)

// call runs `mock: call TOOL {json args}` as a real MCP tools/call and
// reports it the way real agents do: a tool_call, its update, then a line
// of text the test can match.
func (t *turn) call(arg string) error {
	tool, rawArgs := splitVerb(arg)
	if tool == "" {
		t.say("error mock: call needs a tool name")
		return nil
	}
	args, err := parseArgs(rawArgs)
	if err != nil {
		t.sayf("error %s: VALIDATION_ERROR: mock could not parse arguments: %v", tool, err)
		return nil
	}

	id := t.nextToolCallID()
	if t.a.mcpPermission == "qwen" {
		// Qwen Code asks first, and its request is the call's only
		// announcement.
		ok, err := t.qwenMCPPermission(id, tool, args)
		if err != nil {
			if t.ctx.Err() != nil {
				return t.ctx.Err()
			}
			t.sayf("error permission: %v", err)
			return nil
		}
		if !ok {
			t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusFailed)))
			t.sayf("error %s: permission refused", tool)
			return nil
		}
		t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusInProgress)))
	} else {
		t.update(acp.StartToolCall(id, "kandev: "+tool,
			acp.WithStartKind(acp.ToolKindOther),
			acp.WithStartStatus(acp.ToolCallStatusInProgress),
			acp.WithStartRawInput(json.RawMessage(args))))
	}

	res, err := t.s.client().callTool(t.ctx, tool, args)
	// The closing update goes out even when the turn was cancelled, so the
	// client never keeps a tool call spinning.
	finish := context.WithoutCancel(t.ctx)
	if err != nil {
		t.updateCtx(finish, acp.UpdateToolCall(id,
			acp.WithUpdateStatus(acp.ToolCallStatusFailed),
			acp.WithUpdateRawOutput(map[string]string{"error": err.Error()})))
		if t.ctx.Err() != nil {
			return t.ctx.Err()
		}
		t.sayf("error %s: INTERNAL_ERROR: %v", tool, err)
		return nil
	}
	status := acp.ToolCallStatusCompleted
	if res.IsError {
		status = acp.ToolCallStatusFailed
	}
	t.updateCtx(finish, acp.UpdateToolCall(id,
		acp.WithUpdateStatus(status),
		acp.WithUpdateRawOutput(res)))
	if res.IsError {
		t.sayf("error %s: %s", tool, resultText(res))
	} else {
		t.sayf("result %s: %s", tool, resultJSON(res))
	}
	return nil
}

// abandon runs `mock: abandon DURATION TOOL {json}`: a tools/call that the
// agent gives up on after DURATION without cancelling it, as Codex does when
// its MCP client times out. The request stays open on the server (nothing
// tells it the agent left), the tool call is reported failed, and the turn
// goes on. A result that arrives later is dropped.
func (t *turn) abandon(arg string) error {
	dur, rest := splitVerb(arg)
	d, err := time.ParseDuration(dur)
	tool, rawArgs := splitVerb(rest)
	if err != nil || d < 0 || tool == "" {
		t.sayf("error mock: abandon: want %q, got %q", "abandon DURATION TOOL {json}", arg)
		return nil
	}
	args, err := parseArgs(rawArgs)
	if err != nil {
		t.sayf("error %s: VALIDATION_ERROR: mock could not parse arguments: %v", tool, err)
		return nil
	}
	id := t.nextToolCallID()
	t.update(acp.StartToolCall(id, "kandev: "+tool,
		acp.WithStartKind(acp.ToolKindOther),
		acp.WithStartStatus(acp.ToolCallStatusInProgress),
		acp.WithStartRawInput(json.RawMessage(args))))
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	client := t.s.client()
	// The client's timeout runs from sending the request, so the server is
	// up before the clock starts.
	if _, err := client.get(t.ctx); err != nil {
		t.updateCtx(context.WithoutCancel(t.ctx), acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusFailed)))
		if t.ctx.Err() != nil {
			return t.ctx.Err()
		}
		t.sayf("error %s: INTERNAL_ERROR: %v", tool, err)
		return nil
	}
	// Tied to the process, not the turn: ending the turn must not cancel
	// the request, which is the point of this quirk.
	go func() {
		res, err := client.callTool(t.a.base, tool, args)
		done <- outcome{res, err}
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case o := <-done:
		if o.err != nil {
			t.sayf("error %s: INTERNAL_ERROR: %v", tool, o.err)
		} else {
			t.sayf("result %s: %s", tool, resultJSON(o.res))
		}
		t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusCompleted)))
		return nil
	case <-t.ctx.Done():
		return t.ctx.Err()
	case <-timer.C:
	}
	t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusFailed),
		acp.WithUpdateRawOutput(map[string]string{"error": "timed out after " + d.String()})))
	t.sayf("error %s: timed out after %s", tool, d)
	return nil
}

// tools runs `mock: tools`: the sorted tool names of the kandev server.
func (t *turn) tools() error {
	names, err := t.s.client().listTools(t.ctx)
	if err != nil {
		if t.ctx.Err() != nil {
			return t.ctx.Err()
		}
		t.sayf("error tools: INTERNAL_ERROR: %v", err)
		return nil
	}
	t.say("tools: " + strings.Join(names, ", "))
	return nil
}

// parseArgs checks that raw is a JSON object ("{}" when empty) and
// returns it compacted.
func parseArgs(raw string) ([]byte, error) {
	if raw == "" {
		raw = "{}"
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &obj); err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, errors.New("arguments must be a JSON object")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(raw)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// resultJSON renders a successful result: the structured content if any,
// else the text content, compacted when it is JSON.
func resultJSON(res *mcp.CallToolResult) string {
	if len(res.RawStructuredContent) > 0 {
		return compact(res.RawStructuredContent)
	}
	return compact([]byte(resultText(res)))
}

// resultText joins the text blocks of a result; kandev's bridge puts
// "CODE: message" there for errors.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// compact returns b compacted if it is JSON, else unchanged.
func compact(b []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return string(b)
	}
	return buf.String()
}

// calltime calls TOOL N times back to back, straight on the MCP client
// (no tool_call updates, so a benchmark's conversation stays small), and
// says how long each call took as the agent saw it, in microseconds:
// `calltime TOOL: 812 640 …`. kandev-bench reads it.
func (t *turn) calltime(arg string) error {
	nStr, rest := splitVerb(arg)
	n, err := strconv.Atoi(nStr)
	tool, rawArgs := splitVerb(rest)
	if err != nil || n <= 0 || tool == "" {
		t.say("error mock: calltime needs a count and a tool name")
		return nil
	}
	args, err := parseArgs(rawArgs)
	if err != nil {
		t.sayf("error %s: VALIDATION_ERROR: mock could not parse arguments: %v", tool, err)
		return nil
	}
	took := make([]string, 0, n)
	for range n {
		start := time.Now()
		res, err := t.s.client().callTool(t.ctx, tool, args)
		if err != nil {
			if t.ctx.Err() != nil {
				return t.ctx.Err()
			}
			t.sayf("error %s: INTERNAL_ERROR: %v", tool, err)
			return nil
		}
		if res.IsError {
			t.sayf("error %s: %s", tool, resultText(res))
			return nil
		}
		took = append(took, strconv.FormatInt(time.Since(start).Microseconds(), 10))
	}
	t.sayf("calltime %s: %s", tool, strings.Join(took, " "))
	return nil
}
