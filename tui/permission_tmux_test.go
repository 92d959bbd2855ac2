package tui_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// TestTmuxPermissionQuestion: with the permission policy ask, an agent's
// permission request shows as ?you on its row and in the status bar, the
// detail and the answer dialog show the tool and its input with the
// agent's own options, and picking reject from the dialog reaches the
// agent.
func TestTmuxPermissionQuestion(t *testing.T) {
	needTmux(t)
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_PERMISSION=ask"))
	s := startTmux(t, d, 80, 30)
	s.waitText("● live", "0 tasks")

	task := createTask(t, d, api.CreateTaskInput{Title: "Clean the build", Start: true,
		Prompt: "mock: permission rm -rf build/\nmock: say done asking"})
	s.waitRow(task.ID, "?you")
	s.waitText("?you 1")
	s.selectRow(task.ID)
	s.waitText("?you asks you (a to answer): The agent asks permission to run: rm -rf build/")

	s.keys("a")
	s.waitText("Permission for task "+task.ID, "rm -rf build/", `{"command":"rm -rf build/"}`,
		"1) Allow once", "2) Allow always", "3) Reject", "(nothing chosen)")
	if scr := s.screen(); strings.Contains(scr, "other:") {
		t.Fatalf("a permission dialog offers no free-text row:\n%s", scr)
	}
	s.keys("3", "Enter")
	s.waitText("?you 0")
	daemontest.Eventually(t, 20*time.Second, "the rejection to reach the agent", func() bool {
		return agentSaid(t, d, task.ID, "permission: reject\ndone asking")
	})
	s.waitFor("the row without ?you", func(scr string) bool {
		r := row(scr, task.ID)
		return r != "" && !strings.Contains(r, "?you")
	})
	tk, err := d.Client.GetTask(context.Background(), task.ID)
	if err != nil || (tk.PendingQuestion != nil && tk.PendingQuestion.Status == core.QuestionPending) {
		t.Fatalf("engine still has a pending question: %+v %v", tk.PendingQuestion, err)
	}
	s.keys("q")
	s.waitText("kandev exited with status 0")
}

// TestTmuxPermissionTypedRefusal is issue 22's keystrokes against the
// real binary: typing "no, dont" and enter in the permission dialog for
// ./deploy.sh allowed it. Now the typed words choose nothing, enter sends
// nothing and says so, and n then enter refuses.
func TestTmuxPermissionTypedRefusal(t *testing.T) {
	needTmux(t)
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_PERMISSION=ask"))
	s := startTmux(t, d, 80, 24)
	s.waitText("● live", "0 tasks")

	task := createTask(t, d, api.CreateTaskInput{Title: "Deploy to staging", Start: true,
		Prompt: "mock: permission ./deploy.sh --env staging\nmock: say done asking"})
	s.waitRow(task.ID, "?you")
	s.selectRow(task.ID)
	s.keys("a")
	s.waitText("Permission for task "+task.ID, "1) Allow once", "3) Reject", "(nothing chosen)")
	s.text("no, dont")
	s.keys("Enter")
	s.waitText("nothing was sent")
	tk, err := d.Client.GetTask(context.Background(), task.ID)
	if err != nil || tk.PendingQuestion == nil || tk.PendingQuestion.Status != core.QuestionPending {
		t.Fatalf("typed words and enter answered the permission: %+v %v", tk.PendingQuestion, err)
	}
	if agentSaid(t, d, task.ID, "permission:") {
		t.Fatal("the agent was answered by typed words")
	}
	s.keys("n", "Enter")
	daemontest.Eventually(t, 20*time.Second, "the refusal to reach the agent", func() bool {
		return agentSaid(t, d, task.ID, "permission: reject\ndone asking")
	})
	if agentSaid(t, d, task.ID, "permission: allow") {
		t.Fatal("the deploy was allowed")
	}
	s.keys("q")
	s.waitText("kandev exited with status 0")
}
