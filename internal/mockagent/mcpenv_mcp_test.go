package mockagent

import (
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// `mock: mcpenv NAME` says an environment value of the session's kandev
// MCP server, without starting it.
func TestMcpenvSaysTheKandevServerEnv(t *testing.T) {
	h := newHarness(t, nil)
	h.initialize()
	srv := acp.McpServer{Stdio: &acp.McpServerStdio{Name: "kandev", Command: "/nonexistent/kandev", Args: []string{"mcp"},
		Env: []acp.EnvVariable{{Name: "KANDEV_SOCKET", Value: "/tmp/k.sock"}, {Name: "KANDEV_TOKEN", Value: "tok-123"}}}}
	sid := h.newSession(srv)
	got := h.mustPrompt(sid, "mock: mcpenv KANDEV_TOKEN\nmock: mcpenv KANDEV_NOPE")
	want := "mcpenv KANDEV_TOKEN: tok-123\nerror mcpenv: the kandev MCP server has no KANDEV_NOPE in its environment\n"
	if got != want {
		t.Fatalf("said %q, want %q", got, want)
	}

	bare := h.newSession()
	if got := h.mustPrompt(bare, "mock: mcpenv KANDEV_TOKEN"); !strings.HasPrefix(got, "error mcpenv: this session has no kandev MCP server") {
		t.Fatalf("without a server: %q", got)
	}
}
