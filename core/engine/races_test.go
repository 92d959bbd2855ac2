package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/store"
)

// A stop that lands while the agent is still opening its session (its
// initialize unanswered) runs no turn: the prompt stays queued, the
// session ends cancelled, the task is halted. The agent answers only
// after the stop returned, and the stop's teardown reaches it only after
// the turn loop ended, so only the stop fence can keep the turn from
// running.
func TestStopDuringStartRunsNoTurn(t *testing.T) {
	p := newInProc(t)
	launched, release, releaseTeardown := p.holdNextStart()
	defer release()
	defer releaseTeardown()
	task := p.create(api.CreateTaskInput{Title: "race", Prompt: "mock: say should never run", Start: true})
	sid := <-launched
	res, err := p.eng.Chain.StopTask(p.op(), task.ID, api.StopTaskInput{})
	if err != nil || res.Result != "stopped" || len(res.Sessions) != 1 || res.Sessions[0] != sid {
		t.Fatalf("stop: %+v %v (launched %s)", res, err, sid)
	}
	release()
	p.waitLoopEnd(task.ID, 0)
	releaseTeardown()
	got := p.get(task.ID)
	if got.Session == nil || got.Session.ID != sid || got.Session.State != core.SessionCancelled || !got.Halted || got.Queued != 1 {
		t.Fatalf("after stop: session %+v halted %v queued %d", got.Session, got.Halted, got.Queued)
	}
	if n := len(p.prompts(task.ID)); n != 0 {
		t.Fatalf("%d prompt(s) delivered past the stop", n)
	}
	if p.hasSaid(task.ID, "should never run") {
		t.Fatal("a turn escaped the stop")
	}
}

// After a stop, the stopped run's token is refused (its agent can no
// longer message anyone) and what was queued behind the cut turn waits:
// no turn runs until explicit input, here the operator's next message,
// which lifts the stop and is delivered after the earlier item.
func TestMessageAfterStop(t *testing.T) {
	p := newInProc(t)
	parent := p.create(api.CreateTaskInput{Title: "parent"})
	gate, open := p.gateFile("turn")
	task := p.create(api.CreateTaskInput{Title: "busy", ParentID: parent.ID, Start: true,
		Prompt: "mock: say started\nmock: waitfile " + gate})
	p.waitFor("the turn to start", func() bool { return p.hasSaid(task.ID, "started") })
	sid := p.get(task.ID).Session.ID
	p.message(task.ID, "mock: say first after stop", api.DeliveryQueued)
	ended := p.loopsEnded(task.ID)
	if res, err := p.eng.Chain.StopTask(p.op(), task.ID, api.StopTaskInput{}); err != nil || res.Result != "stopped" {
		t.Fatalf("stop: %+v %v", res, err)
	}
	open()
	p.waitLoopEnd(task.ID, ended)

	host := tokenHost{eng: p.eng, token: p.token(sid)}
	_, err := host.CallTool(p.ctx, "message_task_kandev", []byte(`{"task_id":"`+parent.ID+`","prompt":"late"}`))
	wantCode(t, err, core.CodeForbidden)
	if !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("late call: %v, want the revoked token named", err)
	}
	if got := p.get(task.ID); !got.Halted || got.Queued != 1 || len(p.prompts(task.ID)) != 1 {
		t.Fatalf("after the stop: halted %v queued %d prompts %d", got.Halted, got.Queued, len(p.prompts(task.ID)))
	}
	p.message(task.ID, "mock: say second after stop", api.DeliveryQueued)
	p.waitFor("the queue to be delivered", func() bool { return p.hasSaid(task.ID, "second after stop") && p.settled(task.ID) })
	prompts := p.prompts(task.ID)
	if len(prompts) != 3 || !strings.Contains(prompts[1], "first after stop") || !strings.Contains(prompts[2], "second after stop") {
		t.Fatalf("prompts: %q", prompts)
	}
}

// askSetup: a parent held by another child, and an autopilot child that
// asked it a question and ended its turn. The parent's agent holds the
// turn the question brought (a gate) so the test can act as that agent,
// with its live session, while the question is pending; open ends it.
func askSetup(t *testing.T, p *inProc) (parent, child core.Task, qid string, asParent context.Context, open func()) {
	t.Helper()
	gate, open := p.gateFile("parent")
	// The holder exists before the parent's first turn starts: a turn that
	// ended with no open subtask would stall the parent to the operator.
	parent = p.create(api.CreateTaskInput{Title: "parent"})
	p.create(api.CreateTaskInput{Title: "holder", ParentID: parent.ID})
	if _, err := p.eng.Messages.StartTask(p.op(), parent.ID, api.StartTaskInput{Prompt: "mock: on question: waitfile " + gate + "\nmock: say ready"}); err != nil {
		t.Fatal(err)
	}
	// The parent's first turn ends before the child asks, so the question
	// reaches a parent between turns.
	p.waitFor("the parent's first turn", func() bool { return p.hasSaid(parent.ID, "ready") && p.settled(parent.ID) })
	p.waitIdle(parent.ID)
	child = p.create(api.CreateTaskInput{Title: "child", ParentID: parent.ID, Autopilot: true, Start: true,
		Prompt: callDirective(capability.AskParent, map[string]any{"questions": []map[string]any{{"prompt": "Left or right?"}}})})
	p.waitFor("the question and the end of its turn", func() bool {
		c := p.get(child.ID)
		return c.PendingQuestion != nil && p.settled(child.ID)
	})
	p.waitFor("the parent's turn on the question", func() bool {
		for _, pr := range p.prompts(parent.ID) {
			if strings.Contains(pr, "[kandev:question]") {
				return p.get(parent.ID).Session.State == core.SessionRunning
			}
		}
		return false
	})
	return parent, child, p.get(child.ID).PendingQuestion.ID, p.agentOf(parent.ID), open
}

func (p *inProc) questionStatus(taskID, qid string) string {
	p.t.Helper()
	for _, m := range p.conversation(taskID) {
		if m.Kind == core.MsgQuestion && strings.Contains(string(m.Meta), `"question_id":"`+qid+`"`) {
			var st string
			if i := strings.Index(string(m.Meta), `"status":"`); i >= 0 {
				st = string(m.Meta)[i+len(`"status":"`):]
				st = st[:strings.IndexByte(st, '"')]
			}
			return st
		}
	}
	p.t.Fatalf("question %s not in task %s", qid, taskID)
	return ""
}

// The parent's answer and the operator's uncorrelated message race for
// the same question: exactly one wins. Either the answer lands and the
// message is queued after it, or the message supersedes the question and
// the answer is refused as superseded; never both, never neither.
func TestAnswerRacingSupersede(t *testing.T) {
	p := newInProc(t)
	_, child, qid, as, open := askSetup(t, p)
	defer open()

	var wg sync.WaitGroup
	var answerErr, msgErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, answerErr = p.eng.Tools.CallTool(as, "message_task_kandev",
			[]byte(`{"task_id":"`+child.ID+`","prompt":"rightward","reply_to_question_id":"`+qid+`"}`))
	}()
	go func() {
		defer wg.Done()
		_, msgErr = p.eng.Messages.MessageTask(p.op(), child.ID, api.MessageInput{Text: "mock: say going left"})
	}()
	wg.Wait()
	if msgErr != nil {
		t.Fatalf("operator message: %v", msgErr)
	}
	st := p.questionStatus(child.ID, qid)
	switch {
	case answerErr == nil && st == "answered":
	case answerErr != nil && st == "superseded":
		wantCode(t, answerErr, core.CodeConflict)
		if !strings.Contains(answerErr.Error(), "superseded") {
			t.Fatalf("refused answer: %v", answerErr)
		}
	default:
		t.Fatalf("question %s, answer error %v", st, answerErr)
	}
	p.waitFor("the child to take its input", func() bool { return p.hasSaid(child.ID, "going left") && p.settled(child.ID) })
	answers := 0
	for _, pr := range p.prompts(child.ID) {
		if strings.Contains(pr, "rightward") {
			answers++
		}
	}
	if want := map[bool]int{true: 1, false: 0}[st == "answered"]; answers != want {
		t.Fatalf("answer delivered %d time(s), want %d (question %s)", answers, want, st)
	}
}

// Superseded, then stale: the operator's message supersedes the question
// and the parent's late reply is refused; a new question asked and then
// stopped is stale, and the reply to it is refused as stale.
func TestSupersededThenStale(t *testing.T) {
	p := newInProc(t)
	_, child, q1, as, open := askSetup(t, p)
	defer open()
	p.message(child.ID, "mock: say going left", api.DeliveryQueued)
	if st := p.questionStatus(child.ID, q1); st != "superseded" {
		t.Fatalf("question is %s, want superseded", st)
	}
	_, err := p.eng.Tools.CallTool(as, "message_task_kandev", []byte(`{"task_id":"`+child.ID+`","prompt":"right","reply_to_question_id":"`+q1+`"}`))
	wantCode(t, err, core.CodeConflict)
	if !strings.Contains(err.Error(), "superseded") {
		t.Fatalf("late reply: %v", err)
	}
	p.waitFor("the child's turn", func() bool { return p.hasSaid(child.ID, "going left") && p.settled(child.ID) })

	p.message(child.ID, callDirective(capability.AskParent, map[string]any{"questions": []map[string]any{{"prompt": "Up or down?"}}}), api.DeliveryQueued)
	p.waitFor("the second question", func() bool {
		q := p.get(child.ID).PendingQuestion
		return q != nil && q.ID != q1
	})
	q2 := p.get(child.ID).PendingQuestion.ID
	if res, err := p.eng.Chain.StopTask(p.op(), child.ID, api.StopTaskInput{}); err != nil || res.Result != "stopped" {
		t.Fatalf("stop: %+v %v", res, err)
	}
	if st := p.questionStatus(child.ID, q2); st != "stale" {
		t.Fatalf("question is %s, want stale", st)
	}
	_, err = p.eng.Tools.CallTool(as, "message_task_kandev", []byte(`{"task_id":"`+child.ID+`","prompt":"up","reply_to_question_id":"`+q2+`"}`))
	wantCode(t, err, core.CodeConflict)
	if !strings.Contains(err.Error(), "stale") {
		t.Fatalf("stale reply: %v", err)
	}
}

// A task finished while its turn runs takes no further turn: the message
// queued behind that turn waits for a reopen (ADR 0022).
func TestNoTurnOnFinishedTask(t *testing.T) {
	p := newInProc(t)
	gate, open := p.gateFile("turn")
	task := p.create(api.CreateTaskInput{Title: "finishing", Start: true, Prompt: "mock: say working\nmock: waitfile " + gate})
	p.waitFor("the turn", func() bool { return p.hasSaid(task.ID, "working") })
	p.message(task.ID, "mock: say should wait for a reopen", api.DeliveryQueued)
	ended := p.loopsEnded(task.ID)
	if _, err := p.eng.Tasks.SetTaskStatus(p.op(), task.ID, core.StatusDone); err != nil {
		t.Fatal(err)
	}
	open()
	// Once the loop that ran the turn ended, it delivered all it would.
	p.waitLoopEnd(task.ID, ended)
	got := p.get(task.ID)
	if n := len(p.prompts(task.ID)); n != 1 || got.Queued != 1 || got.Status != core.StatusDone {
		t.Fatalf("prompts %d, queued %d, status %s", n, got.Queued, got.Status)
	}
}

// Each queued message is one turn, in order, whatever arrived while a
// turn ran; an interrupt cancels the running turn and is the next prompt,
// ahead of what was queued before it.
func TestTurnLoopOrderAndInterrupt(t *testing.T) {
	p := newInProc(t)
	task := p.create(api.CreateTaskInput{Title: "loop", Start: true, Prompt: "mock: say hanging\nmock: hang"})
	p.waitFor("the hanging turn", func() bool { return p.hasSaid(task.ID, "hanging") })
	for _, m := range []string{"one", "two", "three"} {
		p.message(task.ID, "mock: say queued "+m, api.DeliveryQueued)
	}
	p.message(task.ID, "mock: say urgent", api.DeliveryInterrupt)
	p.waitFor("every turn", func() bool { return p.hasSaid(task.ID, "queued three") && p.settled(task.ID) })
	prompts := p.prompts(task.ID)
	want := []string{"hanging", "urgent", "queued one", "queued two", "queued three"}
	if len(prompts) != len(want) {
		t.Fatalf("prompts %q, want %d", prompts, len(want))
	}
	for i, w := range want {
		if !strings.Contains(prompts[i], w) {
			t.Fatalf("prompt %d is %q, want %q (all: %q)", i, prompts[i], w, prompts)
		}
	}
	turns := 0
	for _, m := range p.conversation(task.ID) {
		if m.Kind == core.MsgTurnEnd {
			turns++
		}
	}
	if turns != len(want) {
		t.Fatalf("%d turn ends for %d prompts", turns, len(want))
	}
}

// A notice queued before notices carried their data (its text rendered at
// enqueue, no data in its meta) is still delivered, as it was written.
func TestLegacyQueuedNoticeDelivered(t *testing.T) {
	p := newInProc(t)
	task := p.create(api.CreateTaskInput{Title: "upgraded"})
	legacy := "[kandev:answer] The operator answered your question q0legacy:\n\nlegacy answer\n\nquestion_id: q0legacy"
	if _, err := p.db.Enqueue(p.ctx, store.QueueItem{TaskID: task.ID, Priority: 0, Kind: "answer", Sender: "person:operator",
		Text: legacy, Meta: `{"question_id":"q0legacy"}`, CreatedAt: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.eng.Messages.StartTask(p.op(), task.ID, api.StartTaskInput{Prompt: "mock: say after"}); err != nil {
		t.Fatal(err)
	}
	p.waitFor("both turns", func() bool { return p.hasSaid(task.ID, "after") && p.settled(task.ID) })
	var rendered []string
	for _, m := range p.conversation(task.ID) {
		if m.Kind == core.MsgPrompt {
			var meta struct{ Rendered string }
			if err := json.Unmarshal(m.Meta, &meta); err != nil {
				t.Fatal(err)
			}
			rendered = append(rendered, meta.Rendered)
		}
	}
	if len(rendered) != 2 || rendered[0] != legacy {
		t.Fatalf("rendered prompts %q; said %q", rendered, p.said(task.ID))
	}
}
