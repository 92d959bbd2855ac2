package engine_test

import (
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
)

// In process (so the race detector sees the recorder, the budget check and
// the stop meet): a task's own budget crossed mid-turn warns it at 80%,
// stops its running turn at 100% and hands it to the operator; a raise
// hands it back and the cut turn runs again, after the notice.
func TestBudgetInProcess(t *testing.T) {
	p := newInProc(t)
	gate, open := p.gateFile("budget")
	task := p.create(core.CreateTaskInput{Title: "spender", Start: true, Budget: "1USD",
		Prompt: "mock: usage 10 10 0.9\nmock: usage 1 1 0.2\nmock: waitfile " + gate + "\nmock: say after"})
	p.waitFor("the budget reached", func() bool { return p.get(task.ID).OverBudget() })
	p.waitFor("the turn stopped", func() bool { return p.settled(task.ID) })
	got := p.get(task.ID)
	if got.Session.State != core.SessionCancelled || got.Assignee == nil || !got.Assignee.IsPerson() || got.Budget == nil || !got.Budget.Reached {
		t.Fatalf("after the budget: session %+v assignee %+v budget %+v", got.Session, got.Assignee, got.Budget)
	}
	sp := core.Spender(p.eng)
	agent := core.WithActor(p.ctx, core.Actor{Kind: core.ActorAgent, TaskID: task.ID, SessionID: got.Session.ID})
	if _, err := sp.SetBudget(agent, task.ID, core.BudgetInput{Add: "5USD"}); core.CodeOf(err) != core.CodeForbidden {
		t.Fatalf("an agent's raise: %v, want forbidden", err)
	}
	open()
	if _, err := sp.SetBudget(p.op(), task.ID, core.BudgetInput{Add: "5USD"}); err != nil {
		t.Fatal(err)
	}
	p.waitFor("the cut turn to run again", func() bool { return p.hasSaid(task.ID, "after") })
	var notices, resumes int
	for _, pr := range p.prompts(task.ID) {
		switch {
		case strings.HasPrefix(pr, "[kandev:budget] Your task's tree has spent"):
			notices++
		case strings.HasPrefix(pr, "[kandev:budget] Your turn on this message was stopped"):
			resumes++
		}
	}
	if notices != 1 || resumes != 1 {
		t.Fatalf("%d notices and %d redeliveries, want one of each: %q", notices, resumes, p.prompts(task.ID))
	}
	// The cut turn's response never came (cancelled: no token counts); its
	// cost came in usage_update before the stop. The turn again reports both.
	p.waitFor("the second turn's tokens", func() bool { u := p.get(task.ID).Usage; return u != nil && u.Turns == 1 })
	if u := p.get(task.ID).Usage; u.Own.Tokens != 22 || u.Own.Cost < 2.1999 || u.Own.Cost > 2.2001 {
		t.Fatalf("usage %+v, want the second run's 22 tokens and both runs' $2.20", u)
	}
}
