package mcpserve_test

import (
	"testing"

	"github.com/kandev/kandev/core/capability"
)

// The bridge answers the protocol as mcp-go's server does (ADR 0047), as
// kandev's own loop did in between (ADR 0039): version negotiation, ping,
// unknown methods and tools, a wrong JSON-RPC version, and notifications
// it has no use for.
func TestProtocolMethods(t *testing.T) {
	r := startBridge(t, &fakeHost{surface: surfaceOf(capability.Case{Surface: capability.KanbanTask})}, nil)
	for client, want := range map[string]string{
		"2025-06-18": "2025-06-18", // a version with the handshake: kept
		"2024-11-05": "2024-11-05",
		"2099-01-01": "2025-11-25", // unknown: the latest with the handshake
		"":           "2025-03-26", // none: the spec's assumed default
	} {
		params := map[string]any{"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}
		if client != "" {
			params["protocolVersion"] = client
		}
		res, _ := r.call("initialize", params)["result"].(map[string]any)
		if res["protocolVersion"] != want {
			t.Errorf("client %q: protocolVersion %v, want %s", client, res["protocolVersion"], want)
		}
	}
	r.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	r.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})

	if res, ok := r.call("ping", nil)["result"].(map[string]any); !ok || len(res) != 0 {
		t.Errorf("ping: want an empty result")
	}
	errCode := func(m map[string]any) (float64, string) {
		e, _ := m["error"].(map[string]any)
		code, _ := e["code"].(float64)
		msg, _ := e["message"].(string)
		return code, msg
	}
	if code, msg := errCode(r.call("no/such_method", nil)); code != -32601 || msg != "Method no/such_method not found" {
		t.Errorf("unknown method: %v %q", code, msg)
	}
	if code, msg := errCode(r.call("tools/call", map[string]any{"name": "no_such_tool", "arguments": map[string]any{}})); code != -32602 ||
		msg != "tool 'no_such_tool' not found: tool not found" {
		t.Errorf("unknown tool: %v %q", code, msg)
	}
	r.send(map[string]any{"jsonrpc": "1.0", "id": 99, "method": "ping"})
	if m, _ := r.response(99); m["error"] == nil {
		t.Errorf("JSON-RPC 1.0 request answered: %v", m)
	} else if code, _ := errCode(m); code != -32600 {
		t.Errorf("JSON-RPC 1.0: code %v, want -32600", code)
	}
	// A string id is echoed as sent.
	r.send(map[string]any{"jsonrpc": "2.0", "id": "abc", "method": "ping"})
	if m := r.next(); m["id"] != "abc" || m["result"] == nil {
		t.Errorf("string id: %v", m)
	}
	if err := r.closeAndWait(); err != nil {
		t.Fatal(err)
	}
}

// The argument check follows JSON Schema for the subset the registry's
// schemas use: an integral number is an integer, a fractional one is not,
// a wrong type is the only error at its place, and every unknown argument
// is named.
func TestArgumentCheckEdges(t *testing.T) {
	host := &fakeHost{surface: surfaceOf(capability.Case{Surface: capability.KanbanTask})}
	r := startBridge(t, host, nil)
	r.initialize()
	cases := []struct {
		tool string
		args any
		want string
	}{
		{"get_task_conversation_kandev", map[string]any{"limit": 2.5},
			"VALIDATION_ERROR: invalid arguments for get_task_conversation_kandev: limit: want integer, got number"},
		{"get_task_conversation_kandev", map[string]any{"limit": 0, "after": -1},
			"VALIDATION_ERROR: invalid arguments for get_task_conversation_kandev: after: must be at least 0, not -1; limit: must be at least 1, not 0"},
		{"message_task_kandev", map[string]any{"task_id": "x", "prompt": "p", "delivery_mode": 3},
			"VALIDATION_ERROR: invalid arguments for message_task_kandev: delivery_mode: want string, got number"},
		{"create_task_kandev", map[string]any{"title": "t", "zeta": 1, "alpha": 2},
			"VALIDATION_ERROR: invalid arguments for create_task_kandev: unknown arguments alpha, zeta (create_task_kandev takes "},
		{"ask_user_question_kandev", map[string]any{"questions": []any{map[string]any{"prompt": "a?",
			"options": []any{map[string]any{"label": ""}, "b"}}}},
			"VALIDATION_ERROR: invalid arguments for ask_user_question_kandev: questions[0].options[0].label: must not be empty; questions[0].options[1]: want object, got string"},
		{"get_task_kandev", "id", "VALIDATION_ERROR: invalid arguments for get_task_kandev: arguments must be a JSON object, not string"},
	}
	for _, tc := range cases {
		res := r.toolCall(tc.tool, tc.args)
		got := resultText(res)
		if res["isError"] != true || len(got) < len(tc.want) || got[:len(tc.want)] != tc.want {
			t.Errorf("%s %v:\n got  %q\n want %q", tc.tool, tc.args, got, tc.want)
		}
	}
	// An integral number written with a fraction is an integer.
	if _, err := r.in.Write([]byte(`{"jsonrpc":"2.0","id":100,"method":"tools/call","params":{"name":"get_task_conversation_kandev","arguments":{"limit":10.0}}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if m, _ := r.response(100); m["result"].(map[string]any)["isError"] == true {
		t.Errorf("limit 10.0 refused: %v", m)
	}
	if err := r.closeAndWait(); err != nil {
		t.Fatal(err)
	}
}
