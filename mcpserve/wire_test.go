package mcpserve

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/internal/mcpwire"
)

// kandev's MCP shapes (internal/mcpwire) replaced mcp-go's `mcp` types to
// keep google/jsonschema-go out of the binary (ADR 0039, addendum). What
// they write must be the bytes mcp-go's types wrote for the same values,
// so that no client sees a change: each case builds the mcp-go value the
// bridge built before and compares the encodings. mcp-go is linked here
// only, in a test, as an independent implementation.
func TestWireMatchesMCPGo(t *testing.T) {
	same := func(what string, ours, theirs any) {
		t.Helper()
		a, err := json.Marshal(ours)
		if err != nil {
			t.Fatalf("%s: ours: %v", what, err)
		}
		b, err := json.Marshal(theirs)
		if err != nil {
			t.Fatalf("%s: mcp-go: %v", what, err)
		}
		if string(a) != string(b) {
			t.Errorf("%s:\nours:   %s\nmcp-go: %s", what, a, b)
		}
	}

	// tools/list: every tool of the registry, as one list.
	var ours []mcpwire.Tool
	var theirs []mcp.Tool
	for _, tool := range capability.All() {
		def, err := Definition(tool)
		if err != nil {
			t.Fatal(err)
		}
		schema, _ := json.Marshal(tool.InputSchema())
		mt := mcp.NewToolWithRawSchema(tool.Name, tool.Description, schema)
		mt.Title = tool.Title
		mt.Annotations = mcp.ToolAnnotation{Title: tool.Title, ReadOnlyHint: mcp.ToBoolPtr(tool.ReadOnly),
			DestructiveHint: mcp.ToBoolPtr(tool.Destructive), IdempotentHint: mcp.ToBoolPtr(tool.Idempotent),
			OpenWorldHint: mcp.ToBoolPtr(false)}
		same(tool.Name, def, mt)
		ours, theirs = append(ours, def), append(theirs, mt)
	}
	same("tools/list", mcpwire.ListToolsResult{Tools: ours}, mcp.ListToolsResult{Tools: theirs})
	same("tools/list, no tools", mcpwire.ListToolsResult{Tools: []mcpwire.Tool{}}, mcp.ListToolsResult{Tools: []mcp.Tool{}})
	same("a tool without title or description", mcpwire.Tool{Name: "x", InputSchema: json.RawMessage(`{ "type": "object" }`)},
		mcp.NewToolWithRawSchema("x", "", json.RawMessage(`{ "type": "object" }`)))

	// initialize, and the version it negotiates.
	b := &bridge{version: "v1.2.3", surface: core.ToolSurface{Surface: "kanban-task", TaskID: "abc"}}
	for _, client := range []string{"", "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28", "2099-01-01", "1999-01-01", "bogus"} {
		if got, want := mcpwire.NegotiateLegacyVersion(client), mcp.NegotiateLegacyVersion(client); got != want {
			t.Errorf("negotiate %q: %s, mcp-go %s", client, got, want)
		}
		old := &mcp.InitializeResult{ProtocolVersion: mcp.NegotiateLegacyVersion(client),
			ServerInfo: mcp.Implementation{Name: "kandev", Version: "v1.2.3"}, Instructions: instructions(b.surface)}
		old.Capabilities.Tools = &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{}
		same("initialize "+client, b.initialize(client), old)
	}
	same("ping", struct{}{}, mcp.EmptyResult{})

	// tools/call results: an object (structured and text), anything else
	// (text only), an error with and without details, a page of tasks.
	for _, v := range []any{
		json.RawMessage(` {"id": "abc", "title": "<b> & \u00e9"} `), map[string]any{"n": 1}, []int{1, 2}, "text", nil, json.RawMessage(""),
	} {
		res := successResult(v)
		raw, _ := json.Marshal(v)
		if rm, ok := v.(json.RawMessage); ok {
			raw = rm
		}
		old := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(string(res.Content[0].Text))}}
		if len(res.StructuredContent) > 0 {
			old.RawStructuredContent = raw
		}
		same("result "+string(raw), res, old)
	}
	for _, e := range []*core.Error{
		core.Errorf(core.CodeValidation, "invalid arguments for x: <missing> \"title\""),
		core.Errorf(core.CodeConflict, "busy").WithDetails(map[string]any{"question": "q1", "n": 2}),
	} {
		old := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(string(e.Code) + ": " + e.Message)},
			StructuredContent: errorBody{Error: e}, IsError: true}
		same("error "+e.Message, errorResult(e), old)
	}
	page := json.RawMessage(`{"tasks":[{"id":"a1","title":"one","status":"todo"}],"next_cursor":"a1"}`)
	res := taskPageResult(page)
	same("task page", res, &mcp.CallToolResult{RawStructuredContent: page,
		Content: []mcp.Content{mcp.NewTextContent(res.Content[0].Text)}})
	same("no content", &mcpwire.CallToolResult{}, &mcp.CallToolResult{})

	// A progress notification.
	params := map[string]any{"progressToken": 7.0, "progress": 2, "message": "still waiting for an answer (20s)"}
	same("progress", mcpwire.Notification{JSONRPC: mcpwire.JSONRPCVersion, Method: mcpwire.MethodNotificationProgress, Params: params},
		mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: "notifications/progress",
			Params: mcp.NotificationParams{AdditionalFields: params}}})
}

// What the bridge reads from a request decodes as mcp-go decoded it,
// errors included: the progress token of tools/call and initialize's
// parameters.
func TestWireDecodesAsMCPGo(t *testing.T) {
	for _, in := range []string{
		`{"name":"x","_meta":{"progressToken":"tok"}}`,
		`{"name":"x","_meta":{"progressToken":12345678901234567890,"other":1}}`,
		`{"name":"x","_meta":{}}`,
		`{"name":"x","_meta":null}`,
		`{"name":"x"}`,
		`{"name":"x","_meta":"nope"}`,
		`{"name":"x","_meta":[1]}`,
	} {
		var ours struct {
			Name      string               `json:"name"`
			Arguments json.RawMessage      `json:"arguments"`
			Meta      *mcpwire.RequestMeta `json:"_meta"`
		}
		var theirs struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
			Meta      *mcp.Meta       `json:"_meta"`
		}
		errOurs, errTheirs := json.Unmarshal([]byte(in), &ours), json.Unmarshal([]byte(in), &theirs)
		if errString(errOurs) != errString(errTheirs) {
			t.Errorf("%s: error %v, mcp-go %v", in, errOurs, errTheirs)
		}
		if (ours.Meta == nil) != (theirs.Meta == nil) || ours.Meta != nil && ours.Meta.ProgressToken != theirs.Meta.ProgressToken {
			t.Errorf("%s: meta %+v, mcp-go %+v", in, ours.Meta, theirs.Meta)
		}
	}
	for _, in := range []string{
		`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`,
		`{}`,
		`{"protocolVersion":7}`,
		`{"clientInfo":{"name":5}}`,
		`{"clientInfo":"c"}`,
	} {
		var ours mcpwire.InitializeParams
		var theirs mcp.InitializeParams
		errOurs, errTheirs := json.Unmarshal([]byte(in), &ours), json.Unmarshal([]byte(in), &theirs)
		// The one difference: an error names the Go type of a nested
		// struct with its package (mcpwire.Implementation).
		if strings.ReplaceAll(errString(errOurs), "mcpwire.", "mcp.") != errString(errTheirs) {
			t.Errorf("%s: error %v, mcp-go %v", in, errOurs, errTheirs)
		}
		if ours.ProtocolVersion != theirs.ProtocolVersion || ours.ClientInfo.Name != theirs.ClientInfo.Name {
			t.Errorf("%s: %+v, mcp-go %+v", in, ours, theirs)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
