package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/internal/mcpwire"
)

// bridge is one `kandev mcp` process's server: the session's tools, each
// forwarding to the daemon.
type bridge struct {
	host     core.ToolHost
	surface  core.ToolSurface
	version  string
	tools    map[string]capability.Tool
	defs     []mcpwire.Tool // tools/list, sorted by name
	progress time.Duration
	log      *slog.Logger
	tr       *transport
}

func newBridge(host core.ToolHost, surface core.ToolSurface, version string, progress time.Duration, log *slog.Logger) *bridge {
	b := &bridge{host: host, surface: surface, version: version, progress: progress, log: log,
		tools: map[string]capability.Tool{}}
	for _, name := range surface.Tools {
		t, ok := capability.Lookup(name)
		if !ok {
			// A daemon newer than this binary: its tool has no schema here.
			log.Debug("kandev mcp: skipping a tool this binary does not know", "tool", name)
			continue
		}
		mt, err := Definition(t)
		if err != nil {
			log.Debug("kandev mcp: skipping tool", "tool", name, "err", err)
			continue
		}
		if _, dup := b.tools[name]; dup {
			continue
		}
		b.tools[name] = t
		b.defs = append(b.defs, mt)
	}
	slices.SortFunc(b.defs, func(x, y mcpwire.Tool) int { return strings.Compare(x.Name, y.Name) })
	return b
}

// initialize answers the handshake: the client's protocol version when it
// is one that has the handshake, else the latest that does (as mcp-go
// negotiates), and the tools capability without list changes (a
// session's tools are fixed when the bridge starts).
func (b *bridge) initialize(clientVersion string) *mcpwire.InitializeResult {
	return &mcpwire.InitializeResult{
		ProtocolVersion: mcpwire.NegotiateLegacyVersion(clientVersion),
		Capabilities:    mcpwire.ServerCapabilities{Tools: &mcpwire.ToolsCapability{}},
		ServerInfo:      mcpwire.Implementation{Name: "kandev", Version: b.version},
		Instructions:    instructions(b.surface),
	}
}

// instructions is the short server description clients may show a model.
func instructions(s core.ToolSurface) string {
	if s.TaskID != "" {
		return fmt.Sprintf("kandev coordination tools for task %s (surface %s). Your task's instructions explain when to use them.", s.TaskID, s.Surface)
	}
	return fmt.Sprintf("kandev tools (surface %s): create and follow tasks that kandev's agents work on.", s.Surface)
}

// Definition is a registry tool as MCP declares it: its JSON Schema, title,
// description and truthful annotations. No kandev tool reaches outside
// kandev, so openWorldHint is false throughout.
func Definition(t capability.Tool) (mcpwire.Tool, error) {
	schema, err := json.Marshal(t.InputSchema())
	if err != nil {
		return mcpwire.Tool{}, fmt.Errorf("schema of %s: %w", t.Name, err)
	}
	return mcpwire.Tool{
		Name:        t.Name,
		Title:       t.Title,
		Description: t.Description,
		InputSchema: schema,
		Annotations: mcpwire.ToolAnnotation{
			Title:           t.Title,
			ReadOnlyHint:    mcpwire.Bool(t.ReadOnly),
			DestructiveHint: mcpwire.Bool(t.Destructive),
			IdempotentHint:  mcpwire.Bool(t.Idempotent),
			OpenWorldHint:   mcpwire.Bool(false),
		},
	}, nil
}

// call serves tools/call: a tool outside the session's surface is an
// invalid-params error, arguments that break the tool's schema a
// VALIDATION_ERROR result worded for the model, and anything else is
// forwarded to the daemon.
func (b *bridge) call(ctx context.Context, name string, args json.RawMessage, token any) (*mcpwire.CallToolResult, *rpcError) {
	t, ok := b.tools[name]
	if !ok {
		return nil, &rpcError{Code: codeInvalidParams, Message: fmt.Sprintf("tool '%s' not found: tool not found", name)}
	}
	if why := explainInvalid(t, args); why != "" {
		return errorResult(core.Errorf(core.CodeValidation, "invalid arguments for %s: %s", t.Name, why)), nil
	}
	return b.forward(ctx, t, args, token), nil
}

// forward passes one valid call to the daemon.
func (b *bridge) forward(ctx context.Context, t capability.Tool, args []byte, token any) *mcpwire.CallToolResult {
	if a := bytes.TrimSpace(args); len(a) == 0 || string(a) == "null" {
		args = []byte("{}")
	}
	if t.Name == "create_task_kandev" && b.surface.TaskID == "" {
		args = withDefaultCWD(args)
	}
	if t.Waits {
		var stop func()
		ctx, stop = b.waiting(ctx, token)
		defer stop()
	}
	res, err := b.host.CallTool(ctx, t.Name, args)
	if err != nil {
		if ctx.Err() != nil {
			if t.Waits {
				return errorResult(core.Errorf(core.CodeUnavailable, "the call to %s was cut off before an answer came; "+
					"a question it recorded stays pending and its answer arrives as your next message", t.Name))
			}
			return errorResult(core.Errorf(core.CodeUnavailable, "the call to %s was cancelled before kandev answered", t.Name))
		}
		return errorResult(core.AsError(err))
	}
	switch t.Name {
	case "list_tasks_kandev":
		return taskPageResult(res)
	case "get_task_diff_kandev":
		return taskDiffResult(res)
	}
	return successResult(res)
}

// withDefaultCWD gives a task created on the external surface the
// directory the person's agent runs in, unless the call names one.
func withDefaultCWD(args []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return args // the daemon reports the bad arguments
	}
	if _, ok := m["cwd"]; ok {
		return args
	}
	wd, err := os.Getwd()
	if err != nil {
		return args
	}
	m["cwd"], _ = json.Marshal(wd)
	out, err := json.Marshal(m)
	if err != nil {
		return args
	}
	return out
}

// waiting prepares a call that may block until a person acts: it ends when
// the client goes away (stdin EOF), and it reports progress while it
// waits when the client gave a progress token. stop must be called before
// the handler returns, so that no progress follows the result.
func (b *bridge) waiting(ctx context.Context, token any) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(b.tr.eof, cancel)
	if token == nil {
		return ctx, func() { unhook(); cancel() }
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(b.progress)
		defer tick.Stop()
		start := time.Now()
		for n := 1; ; n++ {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				secs := int(time.Since(start).Round(time.Second) / time.Second)
				b.tr.notify("notifications/progress", map[string]any{
					"progressToken": token,
					"progress":      n,
					"message":       fmt.Sprintf("still waiting for an answer (%ds)", secs),
				})
			}
		}
	}()
	return ctx, func() {
		close(done)
		<-finished
		unhook()
		cancel()
	}
}

// successResult carries the daemon's JSON result: as structured content
// when it is an object, and always as text.
func successResult(v any) *mcpwire.CallToolResult {
	raw, ok := v.(json.RawMessage)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			return errorResult(core.Errorf(core.CodeInternal, "encode result: %v", err))
		}
		raw = b
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	res := &mcpwire.CallToolResult{Content: []mcpwire.Content{mcpwire.TextContent(string(raw))}}
	if raw[0] == '{' {
		res.StructuredContent = raw
	}
	return res
}

// taskPageResult carries a page of tasks once as data (structured
// content) and, for clients that give their model only the text, as one
// line per task instead of the same JSON again: a fraction of its size.
func taskPageResult(v any) *mcpwire.CallToolResult {
	res := successResult(v)
	if res.IsError || len(res.StructuredContent) == 0 {
		return res
	}
	var page struct {
		Tasks      []core.Task `json:"tasks"`
		NextCursor string      `json:"next_cursor"`
	}
	if json.Unmarshal(res.StructuredContent, &page) != nil {
		return res
	}
	res.Content = []mcpwire.Content{mcpwire.TextContent(taskPageText(page.Tasks, page.NextCursor))}
	return res
}

func taskPageText(tasks []core.Task, next string) string {
	var b strings.Builder
	switch {
	case len(tasks) == 0:
		b.WriteString("No tasks.\n")
	case next != "":
		fmt.Fprintf(&b, "%d tasks; there are more: call again with cursor %q.\n", len(tasks), next)
	default:
		fmt.Fprintf(&b, "%d tasks; this is the last page.\n", len(tasks))
	}
	for _, t := range tasks {
		fmt.Fprintf(&b, "%s [%s] %s", t.ID, t.Status, strings.ReplaceAll(t.Title, "\n", " "))
		var notes []string
		if t.ParentID != "" {
			notes = append(notes, "parent "+t.ParentID)
		}
		if t.Assignee != nil {
			notes = append(notes, t.Assignee.String())
		}
		if t.Autopilot {
			notes = append(notes, "autopilot")
		}
		if q := t.PendingQuestion; q != nil {
			notes = append(notes, fmt.Sprintf("pending %s question %s", q.Kind, q.ID))
		}
		if t.Session != nil {
			notes = append(notes, "session "+string(t.Session.State))
		}
		if t.BackToYou() {
			notes = append(notes, "back to its person: its role ended a turn without handing it on")
		} else if t.Stalled != nil {
			notes = append(notes, "escalated")
		}
		if t.Waiting != "" {
			notes = append(notes, "waiting: "+strings.ReplaceAll(t.Waiting, "\n", " "))
		}
		if len(t.BlockedBy) > 0 {
			notes = append(notes, "blocked by "+strings.Join(t.BlockedBy, ", "))
		}
		if t.Archived {
			notes = append(notes, "archived")
		}
		if len(notes) > 0 {
			b.WriteString(" (" + strings.Join(notes, "; ") + ")")
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// taskDiffResult carries a task's diff as data (structured content) and,
// for clients that give their model only the text, as a summary line, the
// stat and the patch as git prints them: the patch is what a reviewer
// reads, and JSON-escaped it would be longer and harder to read.
func taskDiffResult(v any) *mcpwire.CallToolResult {
	res := successResult(v)
	if res.IsError || len(res.StructuredContent) == 0 {
		return res
	}
	var d core.TaskDiff
	if json.Unmarshal(res.StructuredContent, &d) != nil {
		return res
	}
	res.Content = []mcpwire.Content{mcpwire.TextContent(taskDiffText(d))}
	return res
}

func taskDiffText(d core.TaskDiff) string {
	var b strings.Builder
	base := d.Base
	if len(base) > 12 {
		base = base[:12]
	}
	files := max(d.FilesTotal, len(d.Files))
	if files == 0 {
		fmt.Fprintf(&b, "No changes in task %s (branch %s, worktree %s) since its base %s.\n", d.TaskID, d.Branch, d.Dir, base)
		return b.String()
	}
	fmt.Fprintf(&b, "Task %s changed %d file(s) (+%d -%d) on branch %s against its base %s, in worktree %s.", d.TaskID, files, d.Added, d.Deleted, d.Branch, base, d.Dir)
	if d.Truncated {
		b.WriteString(" The result is cut to fit; the markers say where.")
	}
	b.WriteString("\n\n")
	b.WriteString(d.Stat)
	if d.Patch != "" {
		b.WriteString("\n")
		b.WriteString(d.Patch)
	}
	return b.String()
}

// errorBody is the structured content of a failed call.
type errorBody struct {
	Error *core.Error `json:"error"`
}

// errorResult is a tool error a model can act on: "CODE: message" as
// text, and {"error": {code, message, details}} as structured content.
func errorResult(e *core.Error) *mcpwire.CallToolResult {
	res := &mcpwire.CallToolResult{
		Content: []mcpwire.Content{mcpwire.TextContent(string(e.Code) + ": " + e.Message)},
		IsError: true,
	}
	// An error that cannot be encoded (details of an odd type) keeps its
	// text; its structured content is left out.
	if b, err := json.Marshal(errorBody{Error: e}); err == nil {
		res.StructuredContent = b
	}
	return res
}
