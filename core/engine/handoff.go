package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/prompt"
	"github.com/kandev/kandev/store"
)

// Queue item kinds added by the reporting chain.
const (
	itemHandoff = "handoff" // the task was handed to this role
	itemStalled = "stalled" // an escalation report
	itemWake    = "wake"    // a subtask or blocker finished
)

// mustHold refuses an agent's move on its own task once its role no
// longer holds it (it handed the task on earlier in the same turn, or it
// was taken away): only the holder moves a task forward, and a second
// handoff must not pull the task back from whoever has it now.
func (ch *Chain) mustHold(actor core.Actor, t core.Task) error {
	if !agentOf(actor, t.ID) || ch.auth.holder(actor, t) {
		return nil
	}
	hander := ch.k.handerOf(actor)
	holder := "nobody"
	if t.Assignee != nil {
		holder = t.Assignee.Describe()
	}
	return core.Errorf(core.CodeConflict, "task %s is no longer yours: %s holds it now, not %s; end your turn", t.ID, holder, describeRef(hander)).
		WithDetails(map[string]any{"task_id": t.ID, "assignee": t.Assignee})
}

// HandoffTask serves api.Client's operation of that name.
func (ch *Chain) HandoffTask(ctx context.Context, ref string, in api.HandoffInput) (api.HandoffResult, error) {
	actor := core.ActorFrom(ctx)
	t, err := ch.auth.authorized(ctx, actor, ref, ActHandoff)
	if err != nil {
		return api.HandoffResult{}, err
	}
	if actor.Kind == core.ActorAgent {
		if err := ch.mustHold(actor, t); err != nil {
			return api.HandoffResult{}, err
		}
	}
	if err := ch.messages.deliverable(t); err != nil {
		return api.HandoffResult{}, err
	}
	to := strings.TrimSpace(in.To)
	if to == "" {
		return api.HandoffResult{}, core.Errorf(core.CodeValidation, "say whom to hand the task to: a role, a person, or back")
	}
	var target core.Ref
	if to == "back" {
		if t.HandedBy == nil {
			return api.HandoffResult{}, core.Errorf(core.CodeValidation, "task %s has nobody to hand back to: nobody handed it over; name a role or a person", t.ID)
		}
		target = *t.HandedBy
	} else if target, err = ch.roles.lookupAssignee(ctx, to); err != nil {
		return api.HandoffResult{}, err
	}
	hander := ch.k.handerOf(actor)
	if hander == "" {
		return api.HandoffResult{}, core.Errorf(core.CodeInternal, "cannot tell who is handing task %s over", t.ID)
	}
	return ch.handoff(ctx, t, target, hander, strings.TrimSpace(in.Message), nil)
}

// handoff moves a task to target. stall is nil for a plain handoff; for an
// escalation it carries the reason ("Stalled", core.StallReturned) and
// whether the run failed, and its record stays on the task until the next
// handoff.
func (ch *Chain) handoff(ctx context.Context, t core.Task, target core.Ref, hander, message string, stall *core.Stall) (api.HandoffResult, error) {
	reason := ""
	if stall != nil {
		reason = stall.Reason
	}
	from := core.Ref{}
	if t.Assignee != nil {
		from = *t.Assignee
	}
	if from == target && reason == "" {
		return api.HandoffResult{}, core.Errorf(core.CodeConflict, "task %s is already with %s %s", t.ID, target.Kind, target.Name)
	}
	profile := ""
	if target.IsRole() {
		r, err := ch.roles.roleOf(ctx, target.Name)
		if err != nil {
			return api.HandoffResult{}, core.Errorf(core.CodeNotFound, "%v", err)
		}
		prof, err := ch.roles.profile(ctx, r.Profile)
		if err != nil {
			return api.HandoffResult{}, core.Errorf(core.CodeValidation, "role %s runs profile %s, which does not exist", r.Name, r.Profile)
		}
		if t.Autopilot {
			if err := core.CheckAutopilotProfile(prof); err != nil {
				return api.HandoffResult{}, core.Errorf(core.CodeValidation, "task %s is on autopilot and role %s cannot run it: %s", t.ID, r.Name, err.Error())
			}
		}
		profile = prof.Name
	}
	// Handing a task back to the task that delegated it asks that task's
	// agent to sign it off.
	var signOff *core.Task
	if target.IsTask() {
		p, ok := ch.k.cached(target.Name)
		if !ok || p.Archived || p.Status.Terminal() {
			return api.HandoffResult{}, core.Errorf(core.CodeConflict, "task %s, which delegated %s, is no longer open; hand it to a role or a person", target.Name, t.ID)
		}
		signOff = &p
	}
	var delivered string
	c, err := ch.k.tx(ctx, func(tx *store.Tx, c *changes) error {
		var err error
		delivered, err = ch.handoffTx(ctx, tx, c, t, target, hander, message, stall, profile, signOff, true)
		return err
	})
	if err != nil {
		return api.HandoffResult{}, mapStoreErr(err, "handoff of "+t.ID)
	}
	ch.releaseRun(t.ID, target, core.ActorFrom(ctx).SessionID)
	ch.k.announce(c)
	return api.HandoffResult{TaskID: t.ID, From: from, To: target, Status: "handed_off", Delivered: delivered}, nil
}

// releaseRun ends the run of a role that no longer holds the task: at once
// when it is idle; after its turn when the turn is its own agent's (it
// handed the task on and finishes its turn); by cancelling the turn when
// someone else took the task away mid-turn. bySession is the session of
// the agent that handed it over, if an agent did.
func (ch *Chain) releaseRun(taskID string, to core.Ref, bySession string) {
	rt := ch.runs.runtime(taskID)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	run := rt.run
	if run == nil || (to.IsRole() && run.role == to.Name) {
		return
	}
	if rt.turn != nil && rt.turn.run == run {
		rt.turn.handedOff = true // runTurn ends the run when the turn is over
		if bySession != run.sessionID {
			ch.procWG.Add(1)
			go func() {
				defer ch.procWG.Done()
				cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = run.proc.Cancel(cctx)
			}()
		}
		return
	}
	ch.runs.endRunLocked(run, core.SessionCompleted, "the task was handed to "+to.String())
}

func describeRef(ref string) string {
	if a := core.ParseRefPtr(ref); a != nil {
		return a.Describe()
	}
	return ref
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(no message)"
	}
	return s
}

// stallWhy says why a role stalled, for the notices that word it
// (prompt.Why*).
func stallWhy(cause core.StallCause) string {
	switch cause {
	case core.CauseRunFailed:
		return prompt.WhyFailed
	case core.CauseUnansweredQuestion:
		return prompt.WhyUnanswered
	}
	return prompt.WhyLastWords
}

// BlockTask serves api.Client's operation of that name.
func (ch *Chain) BlockTask(ctx context.Context, ref string, in api.BlockInput) (core.Task, error) {
	t, err := ch.auth.authorized(ctx, core.ActorFrom(ctx), ref, ActBlock)
	if err != nil {
		return core.Task{}, err
	}
	if len(in.On) == 0 {
		return core.Task{}, core.Errorf(core.CodeValidation, "name the task(s) it waits on")
	}
	for _, o := range in.On {
		b, err := ch.k.task(ctx, o)
		if err != nil {
			return core.Task{}, err
		}
		if in.Remove {
			if err := ch.k.db.RemoveBlocker(ctx, t.ID, b.ID); err != nil {
				return core.Task{}, mapStoreErr(err, "blocker "+b.ID+" of "+t.ID)
			}
			continue
		}
		if b.ID == t.ID {
			return core.Task{}, core.Errorf(core.CodeValidation, "a task cannot wait on itself")
		}
		if ch.blocks(ctx, t.ID, b.ID) {
			return core.Task{}, core.Errorf(core.CodeValidation, "task %s already waits on %s (directly or not): that would be a cycle", b.ID, t.ID)
		}
		if err := ch.k.db.AddBlocker(ctx, t.ID, b.ID); err != nil {
			return core.Task{}, mapStoreErr(err, "blocker")
		}
	}
	return ch.k.refresh(ctx, t.ID)
}

// blocks reports whether a waits, directly or through others, on b... i.e.
// whether b is reachable from a by blocker edges reversed: does b wait on a?
func (ch *Chain) blocks(ctx context.Context, a, b string) bool {
	seen := map[string]bool{}
	stack := []string{b}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if cur == a {
			return true
		}
		if seen[cur] {
			continue
		}
		seen[cur] = true
		bs, err := ch.k.db.Blockers(ctx, cur)
		if err != nil {
			return false
		}
		stack = append(stack, bs...)
	}
	return false
}

// handoffTx writes a handoff within tx: the entry, the new assignee, the
// status, the stall record, a superseded question, and, with notice, what
// the new holder is told (a role's handoff or escalation notice, a
// sign-off request to the delegating task). An answer that hands its task
// back (answerHandback) passes no notice: the answer is that turn's
// prompt. It returns how the handoff is delivered.
func (ch *Chain) handoffTx(ctx context.Context, tx *store.Tx, c *changes, t core.Task, target core.Ref, hander, message string,
	stall *core.Stall, profile string, signOff *core.Task, notice bool) (string, error) {
	reason := ""
	if stall != nil {
		reason = stall.Reason
	}
	from := core.Ref{}
	if t.Assignee != nil {
		from = *t.Assignee
	}
	delivered, status := handoffDelivery(target, signOff != nil, reason)
	now := time.Now().UTC()
	by := core.ParseActor(hander)
	text := handoffText(from, target, hander, reason, message)
	c.touch(t.ID)
	switch {
	case signOff != nil:
		c.wake(signOff.ID)
	case target.IsRole():
		c.wake(t.ID)
	}
	m, err := tx.InsertMessage(ctx, store.Message{TaskID: t.ID, Kind: string(core.MsgHandoff), Author: hander, Text: text,
		Meta:      metaJSON(map[string]any{"from": from, "to": target, "by": hander, "message": message, "reason": reason, "delivered": delivered}),
		CreatedAt: now, UpdatedAt: now})
	if err != nil {
		return "", err
	}
	c.addMessage(m)
	if err := tx.Assign(ctx, t.ID, target.String(), hander, profile, now); err != nil {
		return "", err
	}
	if core.CheckTransition(t.Status, status) == nil && t.Status != status {
		if err := tx.SetTaskStatus(ctx, t.ID, string(status), now); err != nil {
			return "", err
		}
	}
	stalled := ""
	if reason != "" {
		stalled = stallJSON(core.Stall{Reason: reason, From: core.ByRef(from), Detail: truncateRunes(message, 2000), At: now, Failed: stall.Failed, Cause: stall.Cause,
			QuestionID: stall.QuestionID})
	}
	if err := tx.SetStalled(ctx, t.ID, stalled, now); err != nil {
		return "", err
	}
	if t.Halted {
		if err := tx.SetTaskHalted(ctx, t.ID, false, now); err != nil {
			return "", err
		}
	}
	if from != target {
		if err := ch.questions.supersedeTx(ctx, tx, t, by, c); err != nil {
			return "", err
		}
	}
	if !notice {
		return delivered, nil
	}
	return delivered, enqueueHandoffNotice(ctx, tx, t, from, target, hander, message, stall, signOff, now)
}

// handoffDelivery is how a hand-off to target is delivered and the status
// it leaves the task in: a turn of the role, a person's review, or a
// sign-off by the task that handed it over; a stall (reason) is to do.
func handoffDelivery(target core.Ref, signOff bool, reason string) (delivered string, status core.Status) {
	delivered, status = "turn", core.StatusTodo
	switch {
	case target.IsPerson():
		delivered, status = "waiting", core.StatusReview
	case signOff:
		delivered, status = "sign_off", core.StatusReview
	}
	if reason != "" {
		status = core.StatusTodo
	}
	return delivered, status
}

// handoffText is the conversation's line for a hand-off, a stall sent
// back, or an escalation.
func handoffText(from, target core.Ref, hander, reason, message string) string {
	text := fmt.Sprintf("handed from %s to %s by %s", from.String(), target.String(), hander)
	switch reason {
	case "":
	case core.StallReturned:
		text = fmt.Sprintf("back to %s: %s ended its turn without handing it on", target.String(), from.String())
	default:
		text = fmt.Sprintf("%s: escalated from %s to %s", reason, from.String(), target.String())
	}
	if message != "" {
		text += ": " + message
	}
	return text
}

// enqueueHandoffNotice queues what the hand-off tells an agent: the
// sign-off on the task that handed it over, or the hand-off (or the
// escalation) to the role now holding it. A person is told by the task.
func enqueueHandoffNotice(ctx context.Context, tx *store.Tx, t core.Task, from, target core.Ref, hander, message string,
	stall *core.Stall, signOff *core.Task, now time.Time) error {
	var err error
	switch {
	case signOff != nil:
		data := prompt.SignOff{ChildID: t.ID, ChildTitle: t.Title, By: describeRef(hander), Message: message}
		_, err = tx.Enqueue(ctx, noticeItem(store.QueueItem{TaskID: signOff.ID, Priority: priorityNormal, Kind: itemHandoff,
			Sender: hander, Text: message, CreatedAt: now}, prompt.NoticeSignOff, data, map[string]any{"child_task_id": t.ID}))
	case target.IsRole():
		kind, tmpl := itemHandoff, prompt.NoticeHandoff
		var data any = prompt.Handoff{TaskID: t.ID, Title: t.Title, Role: target.Name, By: describeRef(hander), Message: message}
		if stall != nil && stall.Reason != "" {
			kind, tmpl = itemStalled, prompt.NoticeEscalation
			data = prompt.Escalation{TaskID: t.ID, Title: t.Title, From: from.Name, Why: stallWhy(stall.Cause), Detail: message}
		}
		_, err = tx.Enqueue(ctx, noticeItem(store.QueueItem{TaskID: t.ID, Priority: priorityFront, Kind: kind, Sender: hander,
			Text: message, CreatedAt: now}, tmpl, data, map[string]any{"from": from.String(), "to": target.String()}))
	}
	return err
}

// Chain is the reporting chain (handoff.go, escalation.go, stop.go):
// hand a task on, block it, stop it, and climb the chain when work
// stalls (the stall check, escalation to the parent or a person).
type Chain struct {
	k *kernel
	// procWG counts the teardowns a hand-off starts, which Close waits for.
	procWG *sync.WaitGroup

	auth      *authorizer
	messages  *Messages  // what a hand-off delivers
	questions *Questions // the questions a hand-off or a stop settles
	roles     *Roles     // the assignee a hand-off names
	runs      *Runs      // the run a stop or a hand-off ends
	turns     *Turns     // the turn loop a hand-off wakes
}
