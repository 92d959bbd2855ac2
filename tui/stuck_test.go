package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
)

// A task stuck with nobody to escalate to is marked STUCK (not escalated),
// the "waiting on you" filter shows it, and w finds it.
func TestStuckTaskNeedsYou(t *testing.T) {
	stuck := core.Task{ID: "stk001", Title: "Orphaned subtask", Status: core.StatusInProgress, Profile: "mock",
		CreatedAt: testNow, UpdatedAt: testNow, YourTurn: true, Assignee: &core.Ref{Kind: "role", Name: "mock"},
		Session: session("stk001", core.SessionWaitingForInput, ago(time.Minute)),
		Stalled: &core.Stall{Reason: core.StallStuck, From: core.ParseBy("role:mock"), Detail: "my last words", At: testNow}}
	r := rowFor(&stuck, testNow, 0)
	var badges []string
	for _, b := range r.badges {
		badges = append(badges, badgeText[b])
	}
	if got := strings.Join(badges, " "); got != "STUCK" {
		t.Fatalf("badges %q, want STUCK", got)
	}
	d := newDriver(t, newFake(append(demoTasks()[:3], stuck)...), 100, 30)
	d.keys("f")
	d.mustShow("[waiting on you]", "stk001")
	d.keys("f", "f", "f", "f", "f") // back to all
	d.mustNotShow("filter:")
	d.keys("w")
	if d.m.tree.selected != "stk001" {
		t.Fatalf("w selected %q, want the stuck task", d.m.tree.selected)
	}
	d.mustShow("STUCK", "nobody to escalate to")
}
