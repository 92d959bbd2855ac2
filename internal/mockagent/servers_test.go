package mockagent

import (
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// The profile's own servers beside kandev's: `mock: servers` starts each as
// a client and lists its tools; `mock: servercall` calls one's tool.
func TestServersAndServercall(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	probe := testServer(acp.EnvVariable{Name: testTokenEnv, Value: "tok-probe"})
	probe.Stdio.Name = "probe"
	broken := acp.McpServer{Stdio: &acp.McpServerStdio{Name: "broken", Command: "/no/such/mcp-server", Args: []string{}, Env: []acp.EnvVariable{}}}
	sid := h.newSession(testServer(acp.EnvVariable{Name: testTokenEnv, Value: "tok-1"}), probe, broken)
	got := h.mustPrompt(sid, strings.Join([]string{
		"mock: servers",
		`mock: servercall probe echo_struct {"n": 2}`,
		"mock: servercall probe forbidden",
		"mock: servercall kandev echo_struct",
		"mock: servercall nope echo_struct",
		"mock: servercall probe",
	}, "\n"))
	lines := strings.Split(strings.TrimSpace(got), "\n")
	want := []string{
		"servers: kandev (echo_struct, forbidden, slow, text_json, whoami); probe (echo_struct, forbidden, slow, text_json, whoami); broken (error: start MCP server broken:",
		`result probe echo_struct: {"args":{"n":2},"token":"tok-probe"}`,
		"error probe forbidden: FORBIDDEN: not yours",
		`result kandev echo_struct: {"args":{},"token":"tok-1"}`,
		`error nope echo_struct: no stdio MCP server named "nope" in this session`,
		"error mock: servercall needs a server and a tool name",
	}
	if len(lines) != len(want) {
		t.Fatalf("got:\n%s", got)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d: got %q, want %q...", i, lines[i], w)
		}
	}
}
