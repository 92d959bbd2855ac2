package daemon_test

import (
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// A stall's cause is decided when it happens, not read from its text
// (ADR 0058): an agent whose last words merely begin like the detail of
// an unanswered child question ended its turn like any other, so the task
// comes back to the operator as their turn, not as an alarm. While the
// text decided, these words made it an escalation.
func TestLastWordsThatReadLikeACauseAreOnlyWords(t *testing.T) {
	d := daemontest.Start(t)
	words := core.StallUnansweredPrefix + "q1 from subtask abc123: nothing of the sort"
	task := create(t, d, api.CreateTaskInput{Title: "Say it", Start: true, Prompt: "mock: say " + words})
	got := waitAssignee(t, d, task.ID, "person", core.Operator)
	if !got.BackToYou() || got.Escalated() || strings.TrimSpace(got.Stalled.Detail) != words {
		t.Fatalf("stalled %+v, want back to you with the agent's words", got.Stalled)
	}
}
