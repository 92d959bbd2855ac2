package engine

// The agents' asks: a task's user question (askUser) and an autopilot
// child's question for its parent (askParent, answered by
// replyToQuestion), and what happens to a call that waits for an answer.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/core/prompt"
	"github.com/kandev/kandev/store"
)

// replyToQuestion answers a child's parent question: only the recorded
// direct parent may, exactly once.
func (qs *Questions) replyToQuestion(ctx context.Context, child core.Task, qid, text string) (api.MessageResult, error) {
	actor := core.ActorFrom(ctx)
	m, err := qs.k.db.MessageByRef(ctx, qid)
	if err != nil || m.Kind != string(core.MsgQuestion) {
		return api.MessageResult{}, core.Errorf(core.CodeNotFound, "question %s not found", qid)
	}
	if m.TaskID != child.ID {
		return api.MessageResult{}, core.Errorf(core.CodeValidation, "question %s belongs to task %s, not %s", qid, m.TaskID, child.ID)
	}
	q, err := parseQuestion(m)
	if err != nil {
		return api.MessageResult{}, mapStoreErr(err, "question "+qid)
	}
	if err := qs.mayAnswer(actor, ActReply, child, q); err != nil {
		return api.MessageResult{}, err
	}
	switch q.Status {
	case core.QuestionAnswered:
		return api.MessageResult{TaskID: child.ID, Status: "already_answered", QuestionID: qid}, nil
	case core.QuestionSuperseded, core.QuestionStale:
		return api.MessageResult{}, core.Errorf(core.CodeConflict, "question %s is %s (%s); it can no longer be answered", qid, q.Status, q.Resolution).
			WithDetails(map[string]any{"question_id": qid, "status": q.Status, "resolution": q.Resolution})
	}
	status, err := qs.answerChildQuestion(ctx, child, m, q, text)
	if err != nil {
		return api.MessageResult{}, err
	}
	return api.MessageResult{TaskID: child.ID, Status: status, QuestionID: qid}, nil
}

// answerChildQuestion answers child's parent question m (q) exactly once,
// for the actor in ctx (the parent's agent, or the person holding the
// parent): the claim, the answer queued at the front of the child's queue,
// the parent's undelivered notice of it withdrawn and the answer noted, in
// one transaction. It reports "answered", or "already_answered" when an
// answer won the race.
func (qs *Questions) answerChildQuestion(ctx context.Context, child core.Task, m store.Message, q questionMeta, text string) (string, error) {
	actor := core.ActorFrom(ctx)
	qid := q.QuestionID
	now := time.Now().UTC()
	a := prompt.Answer{ParentTaskID: q.ParentTaskID, QuestionID: qid, Text: text}
	if personActs(actor) {
		// The person the parent is with answers: the child is told who.
		a.Holder = "person " + actor.Name
		if r, ok := actor.Ref(); ok && r.IsOperator() {
			a.Holder = "the operator"
		}
	}
	claimed := false
	c, err := qs.k.tx(ctx, func(tx *store.Tx, c *changes) error {
		ok, err := qs.resolveQuestion(ctx, tx, m, core.QuestionAnswered, "", &answerMeta{Text: text, By: actor.String(), At: now})
		if err != nil || !ok {
			return err
		}
		claimed = true
		if _, err = tx.Enqueue(ctx, answerItem(child.ID, actor.String(), a,
			map[string]any{"session_id": q.AskedSession}, now)); err != nil {
			return err
		}
		// A notice still queued on the parent (it arrived while the parent
		// was with a person) must not ask its agent later.
		if err := qs.afterResolve(ctx, tx, m, answerDelivery{status: core.QuestionAnswered}); err != nil {
			return err
		}
		note, err := tx.InsertMessage(ctx, store.Message{TaskID: child.ID, Kind: string(core.MsgAnswer), Author: actor.String(), Text: text,
			Meta: metaJSON(map[string]any{"question_id": qid}), CreatedAt: now, UpdatedAt: now})
		if err != nil {
			return err
		}
		c.addMessage(note)
		c.question(m.Seq)
		c.wake(child.ID)
		if q.ParentTaskID != "" {
			c.touch(q.ParentTaskID)
		}
		return nil
	})
	if err != nil {
		return "", mapStoreErr(err, "answer to "+qid)
	}
	if !claimed {
		// Lost the race to another resolution; report what won.
		cur, err := qs.k.db.GetMessage(ctx, m.Seq)
		if err == nil {
			if cq, err := parseQuestion(cur); err == nil && cq.Status == core.QuestionAnswered {
				return "already_answered", nil
			} else if err == nil {
				return "", core.Errorf(core.CodeConflict, "question %s is %s; it can no longer be answered", qid, cq.Status)
			}
		}
		return "", core.Errorf(core.CodeConflict, "question %s changed while answering; read it again", qid)
	}
	qs.k.announce(c)
	return "answered", nil
}

// askUser records (or re-attaches to) the task's user question and waits
// for the operator. A cut-off wait leaves the question pending; the answer
// then arrives as the task's next turn.
func (qs *Questions) askUser(ctx context.Context, actor core.Actor, args capability.QuestionArgs) (any, error) {
	items, err := validateQuestions(args)
	if err != nil {
		return nil, err
	}
	var m store.Message
	// tx then announce: the call's waiter is registered between the two,
	// so an answer given as soon as the question shows finds it waiting.
	// A question of another kind already pending announces nothing.
	announced := func(c *changes, m store.Message) {
		c.addMessage(m)
		c.question(m.Seq)
		c.touch(actor.TaskID)
	}
	c, err := qs.k.tx(ctx, func(tx *store.Tx, c *changes) error {
		existing, err := tx.PendingQuestion(ctx, actor.TaskID)
		if err == nil {
			m = existing
			q, _ := parseQuestion(existing)
			if q.Kind != core.QuestionUser {
				return nil
			}
			q.Delivery = "waiting_call"
			b, _ := json.Marshal(q)
			if _, err := tx.CompareAndSetMeta(ctx, existing.Seq, "$.status", string(core.QuestionPending), string(b), time.Now().UTC()); err != nil {
				return err
			}
			announced(c, existing)
			return nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		m, err = qs.recordQuestion(ctx, tx, actor.TaskID, actor.SessionID, questionMeta{
			QuestionID: "q" + core.NewID(), Kind: core.QuestionUser, Status: core.QuestionPending, Questions: items,
			Context: strings.TrimSpace(args.Context), AskedSession: actor.SessionID, AskedAt: time.Now().UTC(), Delivery: "waiting_call"})
		if err != nil {
			return err
		}
		announced(c, m)
		return nil
	})
	if err != nil {
		return nil, mapStoreErr(err, "question")
	}
	q, _ := parseQuestion(m)
	if q.Kind != core.QuestionUser {
		return map[string]any{"question_id": q.QuestionID, "status": "already_pending", "kind": q.Kind}, nil
	}
	ch := make(chan answerDelivery, 1)
	qs.k.waiters.displace(q.QuestionID, ch, answerDelivery{status: core.QuestionPending, reason: "a newer call re-asked the same question"})
	qs.k.announce(c)

	select {
	case d := <-ch:
		return questionResult(q.QuestionID, d)
	case <-ctx.Done():
	case <-qs.k.baseCtx.Done():
	}
	// Cut off. If an answer raced in, it must still reach the agent.
	still := qs.k.waiters.forget(q.QuestionID, ch)
	if !still {
		select {
		case d := <-ch:
			if d.status == core.QuestionAnswered {
				qs.queueLateAnswer(actor.TaskID, q.QuestionID, d.text)
			}
		default:
		}
	} else {
		qs.markNextTurn(m.Seq)
	}
	return nil, core.Errorf(core.CodeInternal, "the wait for the operator was cut off; question %s stays pending and its answer will arrive as your next message", q.QuestionID)
}

func questionResult(qid string, d answerDelivery) (any, error) {
	switch d.status {
	case core.QuestionAnswered:
		return map[string]any{"question_id": qid, "status": "answered", "answers": d.answers, "answer": d.text}, nil
	case core.QuestionPending:
		return nil, core.Errorf(core.CodeConflict, "question %s: %s", qid, d.reason)
	default:
		return map[string]any{"question_id": qid, "status": string(d.status),
			"message": "The question will not be answered (" + d.reason + "). Read your next message and continue from it."}, nil
	}
}

func (qs *Questions) markNextTurn(seq int64) {
	ctx := context.Background()
	m, err := qs.k.db.GetMessage(ctx, seq)
	if err != nil {
		return
	}
	q, err := parseQuestion(m)
	if err != nil || q.Status != core.QuestionPending {
		return
	}
	q.Delivery = "next_turn"
	b, _ := json.Marshal(q)
	// Best effort, as before: a question that moved on meanwhile keeps
	// its own state.
	_ = qs.k.commit(ctx, func(tx *store.Tx, c *changes) error {
		ok, err := tx.CompareAndSetMeta(ctx, seq, "$.status", string(core.QuestionPending), string(b), time.Now().UTC())
		if ok {
			c.question(seq)
		}
		return err
	})
}

func (qs *Questions) queueLateAnswer(taskID, qid, text string) {
	ctx := context.Background()
	err := qs.k.commit(ctx, func(tx *store.Tx, c *changes) error {
		c.wake(taskID)
		_, err := tx.Enqueue(ctx, answerItem(taskID, core.OperatorActor().String(), prompt.Answer{QuestionID: qid, Text: text}, nil, time.Now().UTC()))
		return err
	})
	if err != nil {
		qs.k.log.Error("queue late answer", "task", taskID, "err", err)
	}
}

// askParent records an autopilot child's question for its direct parent,
// queues it there, and has the engine end the child's turn.
func (qs *Questions) askParent(ctx context.Context, actor core.Actor, args capability.QuestionArgs) (any, error) {
	child, ok := qs.k.cached(actor.TaskID)
	if !ok {
		return nil, core.Errorf(core.CodeNotFound, "task %s not found", actor.TaskID)
	}
	if err := qs.may(actor, ActAskParent, child); err != nil {
		return nil, err
	}
	items, err := validateQuestions(args)
	if err != nil {
		return nil, err
	}
	parentID := child.ParentID
	var m store.Message
	existing := false
	c, err := qs.k.tx(ctx, func(tx *store.Tx, c *changes) error {
		if cur, err := tx.PendingQuestion(ctx, child.ID); err == nil {
			m, existing = cur, true
			return nil
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		now := time.Now().UTC()
		q := questionMeta{QuestionID: "q" + core.NewID(), Kind: core.QuestionParent, Status: core.QuestionPending,
			Questions: items, Context: strings.TrimSpace(args.Context), AskedSession: actor.SessionID, AskedAt: now, ParentTaskID: parentID}
		var err error
		m, err = qs.recordQuestion(ctx, tx, child.ID, actor.SessionID, q)
		if err != nil {
			return err
		}
		asked := renderQuestions(items, q.Context)
		data := prompt.Question{ChildID: child.ID, ChildTitle: child.Title, Questions: asked, QuestionID: q.QuestionID}
		if _, err = tx.Enqueue(ctx, noticeItem(store.QueueItem{TaskID: parentID, Priority: priorityNormal, Kind: itemQuestion, Sender: actor.String(),
			Text: asked, CreatedAt: now}, prompt.NoticeQuestion, data, map[string]any{"question_id": q.QuestionID, "child_task_id": child.ID})); err != nil {
			return err
		}
		c.addMessage(m)
		c.question(m.Seq)
		c.touch(child.ID)
		c.wake(parentID)
		return nil
	})
	if err != nil {
		return nil, mapStoreErr(err, "question")
	}
	q, _ := parseQuestion(m)
	if existing {
		return map[string]any{"question_id": q.QuestionID, "status": "already_pending", "parent_task_id": q.ParentTaskID,
			"message": "You already have a pending question; end your turn now and wait for the answer."}, nil
	}
	qs.k.announce(c)
	qs.tellHolder(parentID)
	qs.endTurnForQuestion(actor.SessionID)
	return map[string]any{"question_id": q.QuestionID, "status": "waiting_for_parent", "parent_task_id": parentID,
		"message": "Question recorded and sent to your parent task. End your turn now: the answer arrives as your next message."}, nil
}

// tellHolder: a question that arrives while its parent is with a person
// is that person's at once, not a notice in a queue nobody runs (ADR
// 0069). The parent is announced as needing them, with its subtasks'
// questions, so the daemon's notification and the TUI's bell say so.
func (qs *Questions) tellHolder(parentID string) {
	p, ok := qs.k.cached(parentID)
	if !ok || !p.WithPerson() || p.Archived || p.Status.Terminal() {
		return
	}
	p.ChildQuestions = qs.k.childQuestions(&p)
	if len(p.ChildQuestions) == 0 {
		return
	}
	qs.k.bus.Publish(core.Event{Type: core.EventNeedsYou, TaskID: p.ID, Task: &p})
}

// endTurnForQuestion ends the asking turn shortly after the tool result is
// back with the agent, unless the agent ends it first.
func (qs *Questions) endTurnForQuestion(sessionID string) {
	run := qs.k.live.session(sessionID)
	if run == nil {
		return
	}
	rt := run.rt
	rt.mu.Lock()
	turn := rt.turn
	if turn == nil || turn.run != run {
		rt.mu.Unlock()
		return
	}
	turn.forQuestion = true
	rt.mu.Unlock()
	qs.procWG.Add(1)
	go func() {
		defer qs.procWG.Done()
		select {
		case <-time.After(qs.k.opts.QuestionTurnGrace):
		case <-qs.k.baseCtx.Done():
			return
		}
		rt.mu.Lock()
		still := rt.turn == turn
		rt.mu.Unlock()
		if still {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = run.proc.Cancel(cctx)
		}
	}()
}

// answerItem queues the answer to a task's own question, from its parent
// or the operator: one notice, rendered at delivery.
func answerItem(taskID, sender string, a prompt.Answer, meta map[string]any, now time.Time) store.QueueItem {
	if meta == nil {
		meta = map[string]any{}
	}
	meta["question_id"] = a.QuestionID
	return noticeItem(store.QueueItem{TaskID: taskID, Priority: priorityFront, Kind: itemAnswer, Sender: sender,
		Text: a.Text, CreatedAt: now}, prompt.NoticeAnswer, a, meta)
}
