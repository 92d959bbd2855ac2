package mockagent

import (
	"os"
	"path/filepath"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// mock: write edits a file in the session's directory, as a coding agent
// does, so workspace tests have a real diff.
func TestWriteFileInSessionDirectory(t *testing.T) {
	leakCheck(t)
	h := newHarness(t, nil)
	h.initialize()
	cwd := t.TempDir()
	resp, err := h.conn.NewSession(h.ctx(), acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	got := h.mustPrompt(resp.SessionId, "mock: write src/new.txt first\\nsecond\nmock: write ../escape.txt x\nmock: write /abs.txt x")
	want := "wrote src/new.txt\n" +
		"error write: \"../escape.txt\" is not a path inside the session's directory\n" +
		"error write: \"/abs.txt\" is not a path inside the session's directory\n"
	if got != want {
		t.Errorf("said %q, want %q", got, want)
	}
	b, err := os.ReadFile(filepath.Join(cwd, "src", "new.txt"))
	if err != nil || string(b) != "first\nsecond\n" {
		t.Fatalf("src/new.txt = %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(cwd), "escape.txt")); !os.IsNotExist(err) {
		t.Fatalf("a write escaped the session's directory: %v", err)
	}
	var edit bool
	for _, n := range h.client.snapshot() {
		if tc := n.Update.ToolCall; tc != nil && tc.Title == "write src/new.txt" && tc.Kind == acp.ToolKindEdit {
			edit = true
		}
	}
	if !edit {
		t.Error("no edit tool call reported")
	}
}
