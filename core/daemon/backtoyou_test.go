package daemon_test

import (
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// A task whose turn ends without a handoff comes back to the operator who
// created it as their turn (ADR 0025), quoting the agent's own last words;
// a later turn that says nothing quotes nothing, not an earlier turn's
// words and not kandev's prompt.
func TestBackToYouQuotesTheLastTurnOnly(t *testing.T) {
	d := daemontest.Start(t)
	task := create(t, d, api.CreateTaskInput{Title: "Say hi", Start: true, Prompt: "mock: say first words"})
	got := waitAssignee(t, d, task.ID, "person", core.Operator)
	if !got.BackToYou() || got.Escalated() || strings.TrimSpace(got.Stalled.Detail) != "first words" || !got.YourTurn {
		t.Fatalf("after the first turn: stalled %+v your turn %v, want back to you with the agent's words", got.Stalled, got.YourTurn)
	}
	// A message hands it back to its role, whose new run's turn says
	// nothing.
	first := got.Session.ID
	message(t, d, task.ID, "mock: sleep 10ms")
	daemontest.Eventually(t, wait, "the second turn to come back", func() bool {
		got = get(t, d, task.ID)
		return got.Session != nil && got.Session.ID != first && !got.Session.State.Live() && got.BackToYou()
	})
	if got.Stalled.Detail != "" {
		t.Fatalf("stall detail %q after a silent turn, want nothing", got.Stalled.Detail)
	}
	if r := d.Run("task", "show", task.ID); !strings.Contains(r.Stdout, "ended without handing on: (nothing)") || strings.Contains(r.Stdout, "escalated") {
		t.Fatalf("task show:\n%s", r.Stdout)
	}
}
