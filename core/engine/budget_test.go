package engine_test

import (
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// In process (so the race detector sees the recorder, the budget check and
// the stop meet): a task's own budget crossed mid-turn warns it at 80%,
// stops its running turn at 100% and hands it to the operator; a raise
// hands it back and, the operator saying so (--cut-turn redeliver), the
// cut turn runs again, after the notice.
func TestBudgetInProcess(t *testing.T) {
	p := newInProc(t)
	gate, open := p.gateFile("budget")
	// The second report waits until the first one's check has warned: two
	// reports checked together are one crossing from 0 to 110%, which is
	// a reached budget with no warning (nothing is left to wrap up).
	warned, warn := p.gateFile("warned")
	task := p.create(api.CreateTaskInput{Title: "spender", Start: true, Budget: "1USD",
		Prompt: "mock: usage 10 10 0.9\nmock: waitfile " + warned + "\nmock: usage 1 1 0.2\nmock: waitfile " + gate + "\nmock: say after"})
	p.waitFor("the 80% notice", func() bool { b := p.get(task.ID).Budget; return b != nil && b.Noticed })
	warn()
	p.waitFor("the budget reached", func() bool { return p.get(task.ID).OverBudget() })
	p.waitFor("the turn stopped", func() bool { return p.settled(task.ID) })
	got := p.get(task.ID)
	if got.Session.State != core.SessionCancelled || got.Assignee == nil || !got.Assignee.IsPerson() || got.Budget == nil || !got.Budget.Reached {
		t.Fatalf("after the budget: session %+v assignee %+v budget %+v", got.Session, got.Assignee, got.Budget)
	}
	sp := api.Spender(p.eng.Spend)
	agent := core.WithActor(p.ctx, core.Actor{Kind: core.ActorAgent, TaskID: task.ID, SessionID: got.Session.ID})
	if _, err := sp.SetBudget(agent, task.ID, api.BudgetInput{Add: "5USD"}); core.CodeOf(err) != core.CodeForbidden {
		t.Fatalf("an agent's raise: %v, want forbidden", err)
	}
	open()
	if _, err := sp.SetBudget(p.op(), task.ID, api.BudgetInput{Add: "5USD", CutTurn: api.CutTurnRedeliver}); err != nil {
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
	// The turns that only acknowledged kandev's notices reported nothing
	// and count by the estimate from their text (issue 37), apart.
	if u := p.get(task.ID).Usage; u.Own.Tokens-u.Own.EstimatedTokens != 22 || u.Own.Cost < 2.1999 || u.Own.Cost > 2.2001 {
		t.Fatalf("usage %+v, want the second run's 22 reported tokens and both runs' $2.20", u)
	}
}

// A tree whose budget a subtask's turn crosses: the cut turn is a stop,
// not a stall (the kid is not reported to the root), the tree climbs once
// as the root with the reason Budget, and the raise (--cut-turn redeliver)
// hands the root back and runs the kid's cut turn again. The kid's turn
// that then ends with no handoff stalls (rule 4) and is reported to the root, whose turn that
// only acknowledges it climbs to a person (ADR 0046): the reason Stalled,
// not a second Budget.
func TestBudgetTreeCutTurnIsNoStall(t *testing.T) {
	p := newInProc(t)
	start, go1 := p.gateFile("start")
	resume, go2 := p.gateFile("resume")
	root := p.create(api.CreateTaskInput{Title: "root", Start: true, Budget: "1USD",
		Prompt: callDirective("create_task_kandev", map[string]any{"title": "kid",
			"prompt": "mock: waitfile " + start + "\nmock: usage 10 10 1.1\nmock: waitfile " + resume + "\nmock: say done-kid"})})
	var kid string
	p.waitFor("the kid", func() bool {
		list, err := p.eng.Tasks.ListTasks(p.ctx, api.ListTasksInput{All: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range list {
			if x.ParentID == root.ID {
				kid = x.ID
			}
		}
		return kid != ""
	})
	// The root's turn ended (held by its open kid) before the kid spends,
	// so the only turn the budget cuts is the kid's.
	p.waitFor("the root's turn to end", func() bool { return p.settled(root.ID) && p.hasSaid(root.ID, "result create_task_kandev") })
	go1()
	p.waitFor("the budget reached", func() bool { return p.get(root.ID).OverBudget() })
	p.waitFor("the kid's turn stopped", func() bool { return p.get(kid).Session.State == core.SessionCancelled })
	k := p.get(kid)
	if k.Stalled != nil || k.Halted || k.Queued != 1 || k.Assignee == nil || !k.Assignee.IsRole() {
		t.Fatalf("kid after the budget: stalled %+v halted %v queued %d assignee %+v", k.Stalled, k.Halted, k.Queued, k.Assignee)
	}
	r := p.get(root.ID)
	if r.Assignee == nil || !r.Assignee.IsPerson() || r.Queued != 0 {
		t.Fatalf("root after the budget: assignee %+v stalled %+v queued %d", r.Assignee, r.Stalled, r.Queued)
	}
	for _, pr := range p.prompts(root.ID) {
		if strings.HasPrefix(pr, "[kandev:stalled]") {
			t.Fatalf("the root was told of a stall the budget's stop made: %q", pr)
		}
	}

	go2()
	if _, err := api.Spender(p.eng.Spend).SetBudget(p.op(), root.ID, api.BudgetInput{Add: "5USD", CutTurn: api.CutTurnRedeliver}); err != nil {
		t.Fatal(err)
	}
	p.waitFor("the kid's stall to climb from the root", func() bool {
		r := p.get(root.ID)
		return r.Stalled != nil && r.Stalled.Reason == "Stalled" && r.Assignee != nil && r.Assignee.IsPerson()
	})
	if !p.hasSaid(kid, "done-kid") {
		t.Fatalf("the kid's cut turn did not run again: %q", p.said(kid))
	}
	if d := p.get(root.ID).Stalled.Detail; !strings.HasPrefix(d, "stalled subtask "+kid) || !strings.Contains(d, "done-kid") {
		t.Fatalf("root's stall detail %q", d)
	}
	var handoffs []string
	for _, m := range p.conversation(root.ID) {
		if m.Kind == core.MsgHandoff {
			handoffs = append(handoffs, m.Text)
		}
	}
	if len(handoffs) != 3 || !strings.HasPrefix(handoffs[0], "Budget: ") || !strings.Contains(handoffs[1], "the budget was raised") ||
		!strings.HasPrefix(handoffs[2], "Stalled: ") {
		t.Fatalf("the root's handoffs %q, want its budget's escalation, the hand-back, the kid's stall", handoffs)
	}
	reports := 0
	for _, m := range p.conversation(kid) {
		if m.Kind == core.MsgHandoff && strings.HasPrefix(m.Text, "Stalled: reported to task "+root.ID) {
			reports++
		}
	}
	if reports != 1 {
		t.Fatalf("the kid was reported stalled %d times, want once (after its turn again)", reports)
	}
}
