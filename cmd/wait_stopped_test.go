package cmd_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// wait on a stopped task says "stopped" once, then what to do (issue 38:
// it printed "stopped: stopped: …").
func TestWaitStoppedSaysItOnce(t *testing.T) {
	d := daemontest.Start(t)
	task := d.CreateTask(t, api.CreateTaskInput{Title: "busy", Prompt: "mock: say up\nmock: hang", Start: true})
	daemontest.Eventually(t, 30*time.Second, "the agent to say up", func() bool {
		for _, m := range d.Conversation(t, task.ID) {
			if m.Kind == core.MsgAgent && strings.Contains(m.Text, "up") {
				return true
			}
		}
		return false
	})
	d.MustRun("task", "stop", task.ID)
	r := d.Run("wait", task.ID)
	if want := task.ID + " stopped: nothing runs until kandev task start " + task.ID + "\n"; r.Code != 16 || r.Stdout != want {
		t.Fatalf("wait: exit %d, stdout %q; want 16 and %q", r.Code, r.Stdout, want)
	}
	r = d.Run("wait", task.ID, "--json")
	var out struct{ Outcome, Reason string }
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil || r.Code != 16 || out.Outcome != "stopped" ||
		out.Reason != "nothing runs until kandev task start "+task.ID {
		t.Fatalf("wait --json: exit %d, %s (%v)", r.Code, r.Stdout, err)
	}
}
