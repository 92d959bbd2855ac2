package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/capability"
)

// bridge is one `kandev mcp` process's server: mcp-go's MCP server with
// the session's tools, each forwarding to the daemon.
type bridge struct {
	host     api.ToolHost
	surface  api.ToolSurface
	srv      *server.MCPServer
	progress time.Duration
	log      *slog.Logger

	// waiting counts the calls in flight that wait for a person; at most
	// MaxWaitingCalls, so that they never hold every worker (stdio.go).
	waiting atomic.Int32
	// out is the bridge's stdout, shared with mcp-go's transport (stdio.go).
	out *output
}

// MaxWaitingCalls is how many calls that wait for a person one bridge
// holds at once; a call beyond it is refused at once. mcp-go serves tool
// calls on a fixed pool of workers (workerPool), so without a bound enough
// waiting calls would hold every worker and queue the calls behind them.
const MaxWaitingCalls = workerPool / 2

func newBridge(host api.ToolHost, surface api.ToolSurface, version string, progress time.Duration, log *slog.Logger) *bridge {
	b := &bridge{host: host, surface: surface, progress: progress, log: log}
	hooks := &server.Hooks{}
	hooks.AddAfterCallTool(b.afterCall)
	sopts := []server.ServerOption{
		server.WithToolCapabilities(false), // a session's tools are fixed when the bridge starts
		server.WithInputSchemaValidation(),
		server.WithHooks(hooks),
		server.WithRecovery(),
		server.WithInstructions(instructions(surface)),
	}
	if log.Enabled(context.Background(), slog.LevelDebug) {
		sopts = append(sopts, server.WithLogger(log))
	}
	b.srv = server.NewMCPServer("kandev", version, sopts...)
	var tools []server.ServerTool
	seen := map[string]bool{}
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
		if seen[name] {
			continue
		}
		seen[name] = true
		tools = append(tools, server.ServerTool{Tool: mt, Handler: b.handler(t)})
	}
	b.srv.AddTools(tools...)
	return b
}

// instructions is the short server description clients may show a model.
func instructions(s api.ToolSurface) string {
	if s.TaskID != "" {
		return fmt.Sprintf("kandev coordination tools for task %s (surface %s). Your task's instructions explain when to use them.", s.TaskID, s.Surface)
	}
	return fmt.Sprintf("kandev tools (surface %s): create and follow tasks that kandev's agents work on.", s.Surface)
}

// Definition is a registry tool as MCP declares it: its JSON Schema, title,
// description and truthful annotations. Only the provider group's tools
// reach outside kandev (the git host): openWorldHint is theirs alone.
func Definition(t capability.Tool) (mcp.Tool, error) {
	schema, err := json.Marshal(t.InputSchema())
	if err != nil {
		return mcp.Tool{}, fmt.Errorf("schema of %s: %w", t.Name, err)
	}
	mt := mcp.NewToolWithRawSchema(t.Name, t.Description, schema)
	mt.Title = t.Title
	mt.Annotations = mcp.ToolAnnotation{
		Title:           t.Title,
		ReadOnlyHint:    mcp.ToBoolPtr(t.ReadOnly),
		DestructiveHint: mcp.ToBoolPtr(t.Destructive),
		IdempotentHint:  mcp.ToBoolPtr(t.Idempotent),
		OpenWorldHint:   mcp.ToBoolPtr(t.OpenWorld),
	}
	return mt, nil
}

// handler forwards one tool's calls to the daemon. mcp-go has checked the
// arguments against the tool's schema before it runs (afterCall words a
// refusal for the model).
func (b *bridge) handler(t capability.Tool) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := []byte(req.Params.RawArguments)
		if a := bytes.TrimSpace(args); len(a) == 0 || string(a) == "null" {
			args = []byte("{}")
		}
		if b.surface.TaskID == "" {
			args = withBridgeDir(t, args)
		}
		if t.Waits {
			if b.waiting.Add(1) > MaxWaitingCalls {
				b.waiting.Add(-1)
				return errorResult(core.Errorf(core.CodeConflict, "%d calls to %s already wait for an answer; "+
					"wait for one of them before you ask again", MaxWaitingCalls, t.Name)), nil
			}
			defer b.waiting.Add(-1)
			var stop func()
			ctx, stop = b.reportProgress(ctx, req)
			defer stop()
		} else {
			// A call that does not wait still answers when stdin ends
			// under it: only the client's cancel (or Run's end) stops it.
			var stop context.CancelFunc
			ctx, stop = outlivesInput(ctx)
			defer stop()
		}
		b.log.Debug("kandev mcp: call", "tool", t.Name)
		res, err := b.host.CallTool(ctx, t.Name, args)
		if err != nil {
			if ctx.Err() != nil {
				if t.Waits {
					return errorResult(core.Errorf(core.CodeUnavailable, "the call to %s was cut off before an answer came; "+
						"a question it recorded stays pending and its answer arrives as your next message", t.Name)), nil
				}
				return errorResult(core.Errorf(core.CodeUnavailable, "the call to %s was cancelled before kandev answered", t.Name)), nil
			}
			return errorResult(core.AsError(err)), nil
		}
		if reply := replies[t.Reply]; reply != nil {
			return reply(res), nil
		}
		return successResult(res), nil
	}
}

// replies shape a result's text by the form its registry entry names
// (capability.Reply); the JSON form is successResult's.
var replies = map[capability.Reply]func(any) *mcp.CallToolResult{
	capability.ReplyTaskPage: taskPageResult,
	capability.ReplyDiff:     taskDiffResult,
}

// afterCall runs after every tools/call mcp-go answered itself or through
// a handler. It words a refusal of mcp-go's schema check for the model, and
// marks the answer to a call the client cancelled to be dropped (MCP:
// a cancelled request gets no answer; mcp-go would send it).
func (b *bridge) afterCall(ctx context.Context, id any, req *mcp.CallToolRequest, result any) {
	if ctx.Err() != nil && !errors.Is(context.Cause(ctx), errInputEnded) {
		b.out.drop(id)
		return
	}
	r, ok := result.(*mcp.CallToolResult)
	if !ok || r == nil || !r.IsError || r.StructuredContent != nil || len(r.RawStructuredContent) > 0 {
		// kandev's own results always carry structured content: this one
		// is not mcp-go's refusal.
		return
	}
	b.log.Debug("kandev mcp: arguments refused", "tool", req.Params.Name)
	*r = *errorResult(core.Errorf(core.CodeValidation, "%s", refusal(req, r)))
}

// refusal words why mcp-go's schema check refused a call: each violation
// at its argument, by the daemon's own check (capability.Check), else
// mcp-go's own text (a schema rule the check does not know).
func refusal(req *mcp.CallToolRequest, r *mcp.CallToolResult) string {
	if t, ok := capability.Lookup(req.Params.Name); ok {
		if _, err := capability.Check(t, req.Params.RawArguments); err != nil {
			return err.Error()
		}
	}
	var parts []string
	for _, c := range r.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, tc.Text)
		}
	}
	if msg := strings.Join(parts, "\n"); msg != "" {
		return "invalid arguments for " + req.Params.Name + ": " + msg
	}
	return "invalid arguments for " + req.Params.Name
}

// withBridgeDir gives the arguments the tool marks BridgeDir (a task
// created on the external surface: its cwd) the directory the person's
// agent runs in, unless the call names one.
func withBridgeDir(t capability.Tool, args []byte) []byte {
	var names []string
	for _, p := range t.Params {
		if p.BridgeDir {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return args
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return args // the daemon reports the bad arguments
	}
	wd, err := os.Getwd()
	if err != nil {
		return args
	}
	changed := false
	for _, name := range names {
		if _, ok := m[name]; !ok {
			m[name], _ = json.Marshal(wd)
			changed = true
		}
	}
	if !changed {
		return args
	}
	out, err := json.Marshal(m)
	if err != nil {
		return args
	}
	return out
}

// reportProgress sends notifications/progress while a call waits for a
// person, when the client gave a progress token. stop must be called
// before the handler returns, so that no progress follows the result.
// The call's context ends when the client cancels it or stdin ends.
func (b *bridge) reportProgress(ctx context.Context, req mcp.CallToolRequest) (context.Context, func()) {
	var token mcp.ProgressToken
	if req.Params.Meta != nil {
		token = req.Params.Meta.ProgressToken
	}
	if token == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
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
				b.out.notify(string(mcp.MethodNotificationProgress), map[string]any{
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
		cancel()
	}
}

// successResult carries the daemon's JSON result: as structured content
// when it is an object, and always as text.
func successResult(v any) *mcp.CallToolResult {
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
	res := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(string(raw))}}
	if raw[0] == '{' {
		res.RawStructuredContent = raw
	}
	return res
}

// taskPageResult carries a page of tasks once as data (structured
// content) and, for clients that give their model only the text, as one
// line per task instead of the same JSON again: a fraction of its size.
func taskPageResult(v any) *mcp.CallToolResult {
	res := successResult(v)
	if res.IsError || len(res.RawStructuredContent) == 0 {
		return res
	}
	var page struct {
		Tasks      []core.Task `json:"tasks"`
		NextCursor string      `json:"next_cursor"`
	}
	if json.Unmarshal(res.RawStructuredContent, &page) != nil {
		return res
	}
	res.Content = []mcp.Content{mcp.NewTextContent(taskPageText(page.Tasks, page.NextCursor))}
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
func taskDiffResult(v any) *mcp.CallToolResult {
	res := successResult(v)
	if res.IsError || len(res.RawStructuredContent) == 0 {
		return res
	}
	var d api.TaskDiff
	if json.Unmarshal(res.RawStructuredContent, &d) != nil {
		return res
	}
	res.Content = []mcp.Content{mcp.NewTextContent(taskDiffText(d))}
	return res
}

func taskDiffText(d api.TaskDiff) string {
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
	if len(d.Comments) > 0 {
		b.WriteString("\nReview comments kept on the task (outdated: the lines changed since):\n")
		for _, c := range d.Comments {
			place := fmt.Sprintf("%s:%d", c.File, c.Line)
			if c.EndLine > c.Line {
				place += fmt.Sprintf("-%d", c.EndLine)
			}
			fmt.Fprintf(&b, "- #%d %s %s (%s): %s\n", c.ID, c.State, place, c.Author.Label(), c.Text)
		}
	}
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
func errorResult(e *core.Error) *mcp.CallToolResult {
	res := &mcp.CallToolResult{
		Content: []mcp.Content{mcp.NewTextContent(string(e.Code) + ": " + e.Message)},
		IsError: true,
	}
	// An error whose details cannot be encoded (an odd type) keeps its
	// code and message. Every kandev result carries structured content:
	// afterCall tells mcp-go's own refusals by its absence.
	b, err := json.Marshal(errorBody{Error: e})
	if err != nil {
		b, _ = json.Marshal(errorBody{Error: &core.Error{Code: e.Code, Message: e.Message}})
	}
	res.RawStructuredContent = b
	return res
}
