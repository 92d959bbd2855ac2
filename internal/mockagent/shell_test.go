package mockagent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// `mock: sh` runs its command in the session's directory once the client
// allows it, reporting a tool call of kind execute, its output (bounded)
// and its exit status; a rejected one runs nothing.
func TestShell(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	h.initialize()
	cwd := t.TempDir()
	resp, err := h.conn.NewSession(h.ctx(), acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	got := h.mustPrompt(resp.SessionId, "mock: sh pwd; echo oops >&2; exit 3\nmock: sh head -c 10000 /dev/zero | tr '\\0' x")
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 5 || lines[0] != "sh: "+cwd || lines[1] != "oops" || lines[2] != "sh exit: 3" || lines[4] != "sh exit: 0" {
		t.Fatalf("said %q", got)
	}
	if out := strings.TrimPrefix(lines[3], "sh: "); len(out) > shellOutputMax+len("…") || !strings.HasSuffix(out, "…") {
		t.Errorf("output not cut at 4 KiB: %d bytes", len(out))
	}
	h.client.mu.Lock()
	perms := h.client.permissions
	h.client.mu.Unlock()
	if len(perms) != 2 || *perms[0].ToolCall.Kind != acp.ToolKindExecute || perms[0].ToolCall.RawInput.(map[string]any)["command"] != "pwd; echo oops >&2; exit 3" {
		t.Fatalf("permission requests %+v", perms)
	}

	h.client.mu.Lock()
	h.client.answer = func(acp.RequestPermissionRequest) acp.RequestPermissionResponse { return selectOption("reject") }
	h.client.mu.Unlock()
	got = h.mustPrompt(resp.SessionId, "mock: sh touch ran")
	if got != "sh: not run (permission: reject)\nsh exit: -1\n" {
		t.Fatalf("rejected: said %q", got)
	}
	if _, err := os.Stat(filepath.Join(cwd, "ran")); !os.IsNotExist(err) {
		t.Fatalf("a rejected command ran: %v", err)
	}
}
