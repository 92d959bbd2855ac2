package daemon_test

import (
	"context"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// A task marked done while its agent is still starting runs no turn: the
// start in flight gives up, and the task stays done with no live run.
func TestDoneWhileStartingRunsNoTurn(t *testing.T) {
	// The agent's initialize takes far longer than a create and a status
	// change under any load: with 50 ms, a busy machine let the start finish
	// first and the turn began before done, as it may. The halt ends the
	// start, so no round waits the delay out.
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_MOCK_INIT_DELAY=20s"))
	ctx := context.Background()
	for i := range 8 {
		task := create(t, d, api.CreateTaskInput{Title: "finished early", Start: true, Prompt: "mock: say ran"})
		if _, err := d.Client.SetTaskStatus(ctx, task.ID, core.StatusDone); err != nil {
			t.Fatalf("round %d: done: %v", i, err)
		}
		got := get(t, d, task.ID)
		if got.Session != nil {
			daemontest.Eventually(t, wait, "the run to end", func() bool {
				s := get(t, d, task.ID).Session
				switch s.State {
				case core.SessionStarting, core.SessionRunning, core.SessionWaitingForInput, core.SessionCreated:
					return false
				}
				return true
			})
		}
		for _, m := range conversation(t, d, task.ID) {
			if m.Kind == core.MsgPrompt {
				t.Fatalf("round %d: a turn ran on a task marked done: %q", i, m.Text)
			}
		}
		if st := get(t, d, task.ID).Status; st != core.StatusDone {
			t.Fatalf("round %d: status %s, want done", i, st)
		}
	}
}
