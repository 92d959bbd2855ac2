package daemon_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// kandev wait returns once the turn that reached the outcome has ended: an
// agent that hands its task to a person and keeps talking is not shown
// running by the next command.
func TestWaitReturnsOnceTheTurnSettled(t *testing.T) {
	d := daemontest.Start(t)
	if _, err := d.Client.AddPerson(context.Background(), api.AddPersonInput{Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	task := create(t, d, api.CreateTaskInput{Title: "hands on, keeps talking", Start: true,
		Prompt: call("handoff_task_kandev", map[string]any{"to": "alice", "message": "yours"}) + "\nmock: sleep 1500ms\nmock: say still here"})
	r := d.Run("wait", task.ID, "--timeout", "60s")
	if r.Code != 10 || !strings.Contains(r.Stdout, "alice") {
		t.Fatalf("wait: exit %d, %q %q", r.Code, r.Stdout, r.Stderr)
	}
	got := get(t, d, task.ID)
	if got.Session == nil || got.Session.State == core.SessionRunning || got.Session.State == core.SessionStarting {
		t.Fatalf("wait returned while the run was still going: %+v", got.Session)
	}
	if !saidContains(t, d, task.ID, "still here") {
		t.Fatalf("the turn had not ended: %q", said(t, d, task.ID))
	}
}
