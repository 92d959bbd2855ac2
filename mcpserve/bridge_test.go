package mcpserve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/mcpserve"
)

// fakeHost plays the daemon for in-process bridge tests.
type fakeHost struct {
	surface    api.ToolSurface
	surfaceErr error
	call       func(ctx context.Context, name string, args []byte) (any, error)

	mu    sync.Mutex
	calls []fakeCall
}

type fakeCall struct {
	name string
	args string
}

func (f *fakeHost) ToolSurface(ctx context.Context) (api.ToolSurface, error) {
	return f.surface, f.surfaceErr
}

func (f *fakeHost) CallTool(ctx context.Context, name string, args []byte) (any, error) {
	f.mu.Lock()
	f.calls = append(f.calls, fakeCall{name, string(args)})
	f.mu.Unlock()
	if f.call == nil {
		return json.RawMessage(`{"ok":true}`), nil
	}
	return f.call(ctx, name, args)
}

func (f *fakeHost) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func (f *fakeHost) callAt(i int) fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[i]
}

func surfaceOf(c capability.Case) api.ToolSurface {
	set := capability.Resolve(c)
	return api.ToolSurface{Surface: string(set.Surface), Question: set.Question, Tools: set.Names(), TaskID: "t1"}
}

// rpc is a line-level JSON-RPC client of a bridge running in process.
type rpc struct {
	t      *testing.T
	in     *io.PipeWriter
	msgs   chan map[string]any
	done   chan error
	nextID int
}

func startBridge(t *testing.T, host *fakeHost, env map[string]string, opts ...mcpserve.Option) *rpc {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r := &rpc{t: t, in: inW, msgs: make(chan map[string]any, 64), done: make(chan error, 1)}
	getenv := func(k string) string { return env[k] }
	go func() {
		err := mcpserve.Run(context.Background(), inR, outW, getenv,
			append([]mcpserve.Option{mcpserve.WithHost(host), mcpserve.WithVersion("test")}, opts...)...)
		outW.Close()
		r.done <- err
	}()
	go func() {
		defer close(r.msgs)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m["jsonrpc"] != "2.0" {
				t.Errorf("stdout carried a line that is not JSON-RPC: %q", sc.Text())
				continue
			}
			r.msgs <- m
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		for range r.msgs {
		}
	})
	return r
}

func (r *rpc) send(v any) {
	r.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.in.Write(append(b, '\n')); err != nil {
		r.t.Fatalf("write to bridge: %v", err)
	}
}

func (r *rpc) request(method string, params any) int {
	r.nextID++
	msg := map[string]any{"jsonrpc": "2.0", "id": r.nextID, "method": method}
	if params != nil {
		msg["params"] = params
	}
	r.send(msg)
	return r.nextID
}

// next returns the next message the bridge wrote. The deadline only keeps
// a broken bridge from hanging the test run.
func (r *rpc) next() map[string]any {
	r.t.Helper()
	select {
	case m, ok := <-r.msgs:
		if !ok {
			r.t.Fatal("the bridge closed its output")
		}
		return m
	case <-time.After(30 * time.Second):
		r.t.Fatal("no message from the bridge")
	}
	return nil
}

// response reads until the response to id, returning it and the
// notifications seen before it.
func (r *rpc) response(id int) (map[string]any, []map[string]any) {
	r.t.Helper()
	var notes []map[string]any
	for {
		m := r.next()
		if m["id"] == nil {
			notes = append(notes, m)
			continue
		}
		if m["id"] != float64(id) {
			r.t.Fatalf("response to %v while waiting for %d: %v", m["id"], id, m)
		}
		return m, notes
	}
}

func (r *rpc) call(method string, params any) map[string]any {
	r.t.Helper()
	resp, _ := r.response(r.request(method, params))
	return resp
}

func (r *rpc) initialize() {
	r.t.Helper()
	resp := r.call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "test", "version": "1"}})
	if resp["error"] != nil {
		r.t.Fatalf("initialize: %v", resp["error"])
	}
	r.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
}

func (r *rpc) toolCall(name string, args any) map[string]any {
	r.t.Helper()
	resp := r.call("tools/call", map[string]any{"name": name, "arguments": args})
	if resp["error"] != nil {
		r.t.Fatalf("tools/call %s: JSON-RPC error %v", name, resp["error"])
	}
	return resp["result"].(map[string]any)
}

// closeAndWait ends stdin and returns what Run returned.
func (r *rpc) closeAndWait() error {
	r.t.Helper()
	r.in.Close()
	select {
	case err := <-r.done:
		return err
	case <-time.After(30 * time.Second):
		r.t.Fatal("Run did not return after stdin EOF")
	}
	return nil
}

func resultText(res map[string]any) string {
	var parts []string
	for _, c := range res["content"].([]any) {
		parts = append(parts, c.(map[string]any)["text"].(string))
	}
	return strings.Join(parts, "\n")
}

// tools/list is exactly the surface, each tool with the registry's schema,
// title, description and truthful annotations.
func TestToolsListIsTheSurface(t *testing.T) {
	for _, c := range []capability.Case{
		{Surface: capability.KanbanTask},
		{Surface: capability.KanbanTask, Autopilot: true, HasParent: true, TitlePending: true},
		{Surface: capability.Configuration},
		{Surface: capability.External},
	} {
		host := &fakeHost{surface: surfaceOf(c)}
		r := startBridge(t, host, nil)
		r.initialize()
		res := r.call("tools/list", nil)["result"].(map[string]any)
		var names []string
		for _, raw := range res["tools"].([]any) {
			tool := raw.(map[string]any)
			name := tool["name"].(string)
			names = append(names, name)
			reg, ok := capability.Lookup(name)
			if !ok {
				t.Fatalf("listed an unknown tool %s", name)
			}
			want, _ := json.Marshal(reg.InputSchema())
			var wantSchema any
			_ = json.Unmarshal(want, &wantSchema)
			if !reflect.DeepEqual(tool["inputSchema"], wantSchema) {
				t.Errorf("%s: inputSchema\n got  %v\n want %v", name, tool["inputSchema"], wantSchema)
			}
			if tool["title"] != reg.Title || tool["description"] != reg.Description {
				t.Errorf("%s: title/description %q / %q", name, tool["title"], tool["description"])
			}
			ann := tool["annotations"].(map[string]any)
			wantAnn := map[string]any{"title": reg.Title, "readOnlyHint": reg.ReadOnly, "destructiveHint": reg.Destructive,
				"idempotentHint": reg.Idempotent, "openWorldHint": false}
			if !reflect.DeepEqual(ann, wantAnn) {
				t.Errorf("%s: annotations %v, want %v", name, ann, wantAnn)
			}
		}
		if want := capability.Resolve(c).Names(); !reflect.DeepEqual(names, want) {
			t.Errorf("%+v: tools/list %v, want %v", c, names, want)
		}
		if err := r.closeAndWait(); err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
}

func TestInitializeNamesKandev(t *testing.T) {
	r := startBridge(t, &fakeHost{surface: surfaceOf(capability.Case{Surface: capability.KanbanTask})}, nil)
	resp := r.call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "test", "version": "1"}})
	res := resp["result"].(map[string]any)
	info := res["serverInfo"].(map[string]any)
	if info["name"] != "kandev" || info["version"] != "test" {
		t.Errorf("serverInfo %v", info)
	}
	if _, ok := res["capabilities"].(map[string]any)["tools"]; !ok {
		t.Errorf("no tools capability: %v", res["capabilities"])
	}
	if err := r.closeAndWait(); err != nil {
		t.Fatal(err)
	}
}

// A call is forwarded with its arguments as sent; an object result comes
// back as structured content and as text.
func TestCallForwardsAndReturnsJSON(t *testing.T) {
	host := &fakeHost{surface: surfaceOf(capability.Case{Surface: capability.KanbanTask})}
	host.call = func(ctx context.Context, name string, args []byte) (any, error) {
		if name == "list_profiles_kandev" {
			return json.RawMessage(`[1,2]`), nil
		}
		return json.RawMessage(`{"id":"c1","title":"child"}`), nil
	}
	r := startBridge(t, host, nil)
	r.initialize()

	res := r.toolCall("create_task_kandev", map[string]any{"title": "child", "autopilot": true})
	if res["isError"] == true {
		t.Fatalf("isError: %v", res)
	}
	if got := res["structuredContent"]; !reflect.DeepEqual(got, map[string]any{"id": "c1", "title": "child"}) {
		t.Errorf("structuredContent %v", got)
	}
	if got := resultText(res); got != `{"id":"c1","title":"child"}` {
		t.Errorf("text %q", got)
	}
	if c := host.callAt(0); c.name != "create_task_kandev" || c.args != `{"autopilot":true,"title":"child"}` {
		t.Errorf("forwarded %+v", c)
	}

	// No arguments at all: the daemon gets {}.
	res = r.toolCall("list_profiles_kandev", nil)
	if _, ok := res["structuredContent"]; ok {
		t.Errorf("a non-object result has no structured content: %v", res)
	}
	if got := resultText(res); got != `[1,2]` {
		t.Errorf("text %q", got)
	}
	if c := host.callAt(1); c.args != `{}` {
		t.Errorf("forwarded args %q, want {}", c.args)
	}
	if err := r.closeAndWait(); err != nil {
		t.Fatal(err)
	}
}

// A daemon error is a tool error a model can act on.
func TestCallErrorShape(t *testing.T) {
	host := &fakeHost{surface: surfaceOf(capability.Case{Surface: capability.KanbanTask})}
	host.call = func(ctx context.Context, name string, args []byte) (any, error) {
		return nil, core.Errorf(core.CodeConflict, "task x already has 3 messages queued").WithDetails(map[string]any{"queued": 3})
	}
	r := startBridge(t, host, nil)
	r.initialize()
	res := r.toolCall("message_task_kandev", map[string]any{"task_id": "x", "prompt": "hi"})
	if res["isError"] != true {
		t.Fatalf("not an error: %v", res)
	}
	if got := resultText(res); got != "CONFLICT: task x already has 3 messages queued" {
		t.Errorf("text %q", got)
	}
	want := map[string]any{"error": map[string]any{"code": "CONFLICT", "message": "task x already has 3 messages queued",
		"details": map[string]any{"queued": float64(3)}}}
	if !reflect.DeepEqual(res["structuredContent"], want) {
		t.Errorf("structuredContent %v\nwant %v", res["structuredContent"], want)
	}

	// A plain error (not a *core.Error) is INTERNAL_ERROR.
	host.call = func(ctx context.Context, name string, args []byte) (any, error) { return nil, errors.New("boom") }
	res = r.toolCall("get_task_kandev", map[string]any{})
	if resultText(res) != "INTERNAL_ERROR: boom" || res["isError"] != true {
		t.Errorf("plain error: %v", res)
	}
	if err := r.closeAndWait(); err != nil {
		t.Fatal(err)
	}
}

// Arguments are checked against the schema before anything is forwarded.
func TestSchemaValidationBeforeForwarding(t *testing.T) {
	host := &fakeHost{surface: surfaceOf(capability.Case{Surface: capability.KanbanTask})}
	r := startBridge(t, host, nil)
	r.initialize()
	cases := []struct {
		tool string
		args any
		want string
	}{
		{"list_tasks_kandev", map[string]any{"bogus": 1},
			"VALIDATION_ERROR: invalid arguments for list_tasks_kandev: unknown argument bogus (list_tasks_kandev takes root_id, include_archived, status, parent_id, assignee, limit, cursor)"},
		{"create_task_kandev", map[string]any{}, "VALIDATION_ERROR: invalid arguments for create_task_kandev: missing required argument title"},
		{"create_task_kandev", map[string]any{"title": "", "autopilot": "yes"},
			"VALIDATION_ERROR: invalid arguments for create_task_kandev: autopilot: want boolean, got string; title: must not be empty"},
		{"message_task_kandev", map[string]any{"task_id": "x", "prompt": "p", "delivery_mode": "later"},
			`VALIDATION_ERROR: invalid arguments for message_task_kandev: delivery_mode: want one of queued, interrupt, got "later"`},
		{"get_task_conversation_kandev", map[string]any{"limit": 500},
			"VALIDATION_ERROR: invalid arguments for get_task_conversation_kandev: limit: must be at most 200, not 500"},
		{"ask_user_question_kandev", map[string]any{"questions": []any{map[string]any{"prompt": "a?", "extra": true}}},
			"VALIDATION_ERROR: invalid arguments for ask_user_question_kandev: questions[0]: unknown argument extra"},
		{"ask_user_question_kandev", map[string]any{"questions": []any{}},
			"VALIDATION_ERROR: invalid arguments for ask_user_question_kandev: questions: give at least 1, not 0"},
		{"get_task_kandev", []any{1}, "VALIDATION_ERROR: invalid arguments for get_task_kandev: arguments must be a JSON object, not array"},
	}
	for _, tc := range cases {
		res := r.toolCall(tc.tool, tc.args)
		if res["isError"] != true || resultText(res) != tc.want {
			t.Errorf("%s %v:\n got  %q\n want %q", tc.tool, tc.args, resultText(res), tc.want)
		}
		sc, _ := res["structuredContent"].(map[string]any)
		if e, _ := sc["error"].(map[string]any); e["code"] != "VALIDATION_ERROR" {
			t.Errorf("%s: structuredContent %v", tc.tool, res["structuredContent"])
		}
	}
	if n := host.callCount(); n != 0 {
		t.Errorf("%d invalid calls reached the daemon", n)
	}
	if err := r.closeAndWait(); err != nil {
		t.Fatal(err)
	}
}

// A tool outside the session's surface is not there to call.
func TestToolOutsideSurfaceRefused(t *testing.T) {
	host := &fakeHost{surface: surfaceOf(capability.Case{Surface: capability.External})}
	r := startBridge(t, host, nil)
	r.initialize()
	for _, name := range []string{"stop_task_kandev", "ask_user_question_kandev", "no_such_tool"} {
		resp := r.call("tools/call", map[string]any{"name": name, "arguments": map[string]any{"task_id": "x"}})
		if resp["error"] == nil {
			t.Errorf("%s: answered %v", name, resp)
		}
	}
	if host.callCount() != 0 {
		t.Error("a call outside the surface reached the daemon")
	}
	if err := r.closeAndWait(); err != nil {
		t.Fatal(err)
	}
}

// A waiting tool reports progress while it waits when the client gave a
// progress token, and never after its result.
func TestWaitingToolReportsProgress(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	host := &fakeHost{surface: surfaceOf(capability.Case{Surface: capability.KanbanTask})}
	host.call = func(ctx context.Context, name string, args []byte) (any, error) {
		close(entered)
		select {
		case <-release:
			return json.RawMessage(`{"status":"answered","answers":["blue"]}`), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	r := startBridge(t, host, map[string]string{mcpserve.EnvProgressInterval: "1ms"})
	r.initialize()
	id := r.request("tools/call", map[string]any{"name": "ask_user_question_kandev",
		"arguments": map[string]any{"questions": []any{map[string]any{"prompt": "Which colour?"}}},
		"_meta":     map[string]any{"progressToken": "tok-1"}})
	<-entered
	last := 0.0
	for seen := 0; seen < 3; {
		m := r.next()
		if m["method"] != "notifications/progress" {
			t.Fatalf("want progress, got %v", m)
		}
		p := m["params"].(map[string]any)
		if p["progressToken"] != "tok-1" {
			t.Fatalf("progress for token %v", p["progressToken"])
		}
		if p["progress"].(float64) <= last {
			t.Fatalf("progress did not increase: %v after %v", p["progress"], last)
		}
		last = p["progress"].(float64)
		seen++
	}
	close(release)
	resp, _ := r.response(id)
	if resp["result"].(map[string]any)["structuredContent"].(map[string]any)["status"] != "answered" {
		t.Fatalf("result %v", resp)
	}
	// Nothing about that call follows its result.
	pong := r.request("ping", nil)
	for {
		m := r.next()
		if m["id"] == float64(pong) {
			break
		}
		if m["method"] == "notifications/progress" {
			t.Fatalf("progress after the result: %v", m)
		}
	}
	if err := r.closeAndWait(); err != nil {
		t.Fatal(err)
	}
}

// notifications/cancelled cancels the forwarded request, and the
// cancelled call gets no answer.
func TestCancelCancelsForwardedCall(t *testing.T) {
	entered := make(chan struct{})
	cancelled := make(chan struct{})
	host := &fakeHost{surface: surfaceOf(capability.Case{Surface: capability.KanbanTask})}
	host.call = func(ctx context.Context, name string, args []byte) (any, error) {
		close(entered)
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	}
	r := startBridge(t, host, nil)
	r.initialize()
	id := r.request("tools/call", map[string]any{"name": "ask_user_question_kandev",
		"arguments": map[string]any{"questions": []any{map[string]any{"prompt": "Which colour?"}}}})
	<-entered
	r.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": map[string]any{"requestId": id, "reason": "user"}})
	<-cancelled
	r.in.Close()
	for m := range r.msgs {
		if m["id"] == float64(id) {
			t.Errorf("the cancelled call was answered: %v", m)
		}
	}
	if err := <-r.done; err != nil {
		t.Fatal(err)
	}
}

// EOF on stdin ends the bridge cleanly: a call in flight still answers; a
// call waiting for a person is cut off.
func TestEOFEndsCleanly(t *testing.T) {
	entered := make(chan string, 2)
	release := make(chan struct{})
	host := &fakeHost{surface: surfaceOf(capability.Case{Surface: capability.KanbanTask})}
	host.call = func(ctx context.Context, name string, args []byte) (any, error) {
		entered <- name
		if name == capability.AskUser {
			<-ctx.Done() // only EOF ends it
			return nil, ctx.Err()
		}
		<-release
		return json.RawMessage(`{"id":"t1"}`), nil
	}
	r := startBridge(t, host, nil)
	r.initialize()
	waitID := r.request("tools/call", map[string]any{"name": capability.AskUser,
		"arguments": map[string]any{"questions": []any{map[string]any{"prompt": "?"}}}})
	getID := r.request("tools/call", map[string]any{"name": "get_task_kandev", "arguments": map[string]any{}})
	<-entered
	<-entered
	r.in.Close()
	close(release)
	answered := map[float64]map[string]any{}
	for m := range r.msgs {
		if id, ok := m["id"].(float64); ok {
			answered[id] = m
		}
	}
	if err := <-r.done; err != nil {
		t.Fatalf("Run after EOF: %v", err)
	}
	if m := answered[float64(getID)]; m == nil || m["result"].(map[string]any)["isError"] == true {
		t.Errorf("the call in flight at EOF was not answered: %v", m)
	}
	if m := answered[float64(waitID)]; m != nil && m["result"].(map[string]any)["isError"] != true {
		t.Errorf("the waiting call answered successfully after EOF: %v", m)
	}
}

func TestParseErrorKeepsServing(t *testing.T) {
	r := startBridge(t, &fakeHost{surface: surfaceOf(capability.Case{Surface: capability.External})}, nil)
	if _, err := r.in.Write([]byte("this is not json\n")); err != nil {
		t.Fatal(err)
	}
	m := r.next()
	if e, _ := m["error"].(map[string]any); e == nil || e["code"] != float64(-32700) {
		t.Fatalf("want a parse error, got %v", m)
	}
	r.initialize()
	if err := r.closeAndWait(); err != nil {
		t.Fatal(err)
	}
}

// A refused token stops the bridge before it reads or writes anything.
func TestRefusedAtStart(t *testing.T) {
	host := &fakeHost{surfaceErr: core.Errorf(core.CodeForbidden, "session token revoked: session s1 has ended")}
	var out strings.Builder
	err := mcpserve.Run(context.Background(), strings.NewReader(""), &out,
		func(k string) string { return map[string]string{mcpserve.EnvToken: "tok"}[k] }, mcpserve.WithHost(host))
	if err == nil {
		t.Fatal("Run accepted a refused token")
	}
	for _, want := range []string{"FORBIDDEN", "revoked", "KANDEV_TOKEN"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if out.Len() != 0 {
		t.Errorf("wrote %q to stdout", out.String())
	}
}

// Calls run concurrently: a slow one does not hold up the others.
func TestCallsRunConcurrently(t *testing.T) {
	release := make(chan struct{})
	host := &fakeHost{surface: surfaceOf(capability.Case{Surface: capability.KanbanTask})}
	host.call = func(ctx context.Context, name string, args []byte) (any, error) {
		if strings.Contains(string(args), "slow") {
			<-release
		}
		return json.RawMessage(fmt.Sprintf(`{"args":%s}`, args)), nil
	}
	r := startBridge(t, host, nil)
	r.initialize()
	slow := r.request("tools/call", map[string]any{"name": "get_task_kandev", "arguments": map[string]any{"task_id": "slow"}})
	fast := r.request("tools/call", map[string]any{"name": "get_task_kandev", "arguments": map[string]any{"task_id": "fast"}})
	m := r.next()
	if m["id"] != float64(fast) {
		t.Fatalf("first answer %v, want the fast call %d", m, fast)
	}
	close(release)
	if resp, _ := r.response(slow); resp["result"] == nil {
		t.Fatalf("slow call: %v", resp)
	}
	if err := r.closeAndWait(); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a goroutine-safe strings.Builder.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Diagnostics go to stderr, only with KANDEV_MCP_DEBUG; stdout stays
// JSON-RPC either way (startBridge checks every line).
func TestDiagnosticsOnlyOnStderr(t *testing.T) {
	for _, debug := range []string{"", "1"} {
		var stderr syncBuffer
		host := &fakeHost{surface: surfaceOf(capability.Case{Surface: capability.KanbanTask})}
		r := startBridge(t, host, map[string]string{mcpserve.EnvDebug: debug}, mcpserve.WithStderr(&stderr))
		r.initialize()
		r.toolCall("get_task_kandev", map[string]any{})
		r.toolCall("get_task_kandev", map[string]any{"nope": 1})
		if err := r.closeAndWait(); err != nil {
			t.Fatal(err)
		}
		if debug == "" && stderr.String() != "" {
			t.Errorf("stderr without %s: %q", mcpserve.EnvDebug, stderr.String())
		}
		if debug != "" && !strings.Contains(stderr.String(), "get_task_kandev") {
			t.Errorf("stderr with %s=1 says nothing of the calls: %q", mcpserve.EnvDebug, stderr.String())
		}
	}
}
