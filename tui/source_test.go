package tui

import (
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
)

// The detail pane shows where a task from a tracker came from, with its
// link; a task from no issue shows no such line.
func TestDetailShowsTheTaskSource(t *testing.T) {
	task := &core.Task{ID: "k3f9qa", Title: "Login hangs on Safari", Status: core.StatusTodo, Profile: "mock",
		Source: &core.TaskSource{Kind: "github", Ref: "gh:acme/web#12", URL: "https://github.com/acme/web/issues/12"}}
	text := strings.Join(detailHeader(testStyles(), task, 100, 30, testNow), "\n")
	if !strings.Contains(text, "from gh:acme/web#12 · https://github.com/acme/web/issues/12") {
		t.Fatalf("header:\n%s", text)
	}
	task.Source = nil
	if text := strings.Join(detailHeader(testStyles(), task, 100, 30, testNow), "\n"); strings.Contains(text, "from gh:") {
		t.Fatalf("a task from no issue:\n%s", text)
	}
}
