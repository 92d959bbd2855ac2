package mcpserve_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// gitRepo makes a repository with one commit in a temp dir.
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	repo := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("# app\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"}, {"config", "user.name", "Test"}, {"config", "user.email", "test@example.com"},
		{"config", "commit.gpgsign", "false"}, {"add", "."}, {"commit", "-q", "-m", "initial"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return repo
}

// Issue 11: a parent's agent, through kandev mcp, reads where its child
// works (get_task_kandev: directory, branch, base) and what it changed
// there (get_task_diff_kandev) once the child hands its work back; the
// child cannot read its parent's diff.
func TestParentReadsChildDiffThroughMCP(t *testing.T) {
	d := daemontest.Start(t)
	repo := gitRepo(t)
	child := strings.Join([]string{
		"Write the greeting.",
		"mock: write greet/hello.txt hello from the child",
		`mock: call get_task_diff_kandev {"task_id":"${parent_task_id}"}`,
		`mock: call handoff_task_kandev {"to":"back","message":"greeting written"}`,
	}, "\n")
	create, _ := json.Marshal(map[string]any{"title": "Write the greeting", "workspace": "new", "prompt": child})
	prompt := strings.Join([]string{
		"mock: on handoff: call get_task_kandev {\"task_id\":\"${child_task_id}\"}",
		"mock: on handoff: call get_task_diff_kandev {\"task_id\":\"${child_task_id}\"}",
		"mock: call create_task_kandev " + string(create),
	}, "\n")
	parent, err := d.Client.CreateTask(bg(), api.CreateTaskInput{Title: "Greet", CWD: repo, Prompt: prompt, Start: true})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		ID        string          `json:"id"`
		Workspace *core.Workspace `json:"workspace"`
	}
	if err := json.Unmarshal([]byte(waitLine(t, d, parent.ID, "result get_task_kandev:", 1)), &got); err != nil {
		t.Fatal(err)
	}
	w := got.Workspace
	if w == nil || w.Mode != core.WorkspaceWorktree || w.Dir == "" || w.Dir == parent.Workspace.Dir ||
		!strings.HasPrefix(w.Branch, "kandev/"+got.ID) || w.Base == "" {
		t.Fatalf("get_task_kandev of the child: workspace %+v", w)
	}
	var diff api.TaskDiff
	if err := json.Unmarshal([]byte(waitLine(t, d, parent.ID, "result get_task_diff_kandev:", 1)), &diff); err != nil {
		t.Fatal(err)
	}
	if diff.TaskID != got.ID || diff.Dir != w.Dir || diff.Branch != w.Branch || diff.Base != w.Base ||
		len(diff.Files) != 1 || diff.Files[0].Path != "greet/hello.txt" || diff.Added != 1 ||
		!strings.Contains(diff.Patch, "+hello from the child") || diff.Truncated {
		t.Fatalf("the child's diff as its parent reads it: %+v", diff)
	}
	// Upwards is refused: the child's call said so in its conversation.
	if e := waitLine(t, d, got.ID, "error get_task_diff_kandev:", 1); !strings.HasPrefix(e, "FORBIDDEN: ") {
		t.Fatalf("child reading its parent's diff: %q", e)
	}
}
