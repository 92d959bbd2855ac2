package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/prompt"
	"github.com/kandev/kandev/store"
)

// stallCheck applies rule 4 after a role's turn on a task ended, or its run
// failed: whoever is assigned a task moves it forward. A task its role
// left without a handoff, a pending question, open subtasks or blockers,
// or a next turn already queued, is stalled and goes up the chain.
// It runs at those moments and in the startup sweep, never on a timer.
func (ch *Chain) stallCheck(ctx context.Context, taskID, role string, failed bool, detail string) {
	defer func() {
		if err := ch.k.db.SetNeedsCheck(ctx, taskID, false); err != nil {
			ch.k.log.Error("clear stall check", "task", taskID, "err", err)
		}
	}()
	// A child's question is read before the task, never after: the question
	// and its notice to this task commit together, so one recorded after
	// this read shows in the task read below as a queued turn (its notice),
	// which holds the task. Read the other way round, a question asked
	// between the reads was taken for one this task's turn ignored.
	unanswered, qid := ch.unansweredChildQuestion(ctx, taskID)
	// The store, not the cache: a handoff that committed a moment ago (and
	// whose refresh has not run yet) must hold the task.
	t, err := ch.k.storedTask(ctx, taskID)
	if err != nil || t.Archived || t.Status.Terminal() || t.Halted {
		return
	}
	if t.Assignee == nil || !t.Assignee.IsRoleNamed(role) {
		return // handed on during the turn
	}
	if t.PendingQuestion != nil {
		return // held by its question
	}
	if !failed && t.Queued > 0 {
		return // its next turn is already queued
	}
	// A child's question that this task's turn left unanswered (and did not
	// relay: a relay is its own pending question, above) is not a hold: the
	// child waits on this task, so this task waiting on the child would be
	// a deadlock that nobody is told about.
	// Nor is a subtask that stalled and was reported to this task (ADR
	// 0046): it waits on this task to decide, so this task's turn that
	// ended without deciding leaves a tree where nothing runs.
	holding, stalledKid := ch.holdingSubtasks(taskID)
	if unanswered == "" && (len(t.BlockedBy) > 0 || holding > 0) {
		return // waits on subtasks or blockers; their finishing wakes it
	}
	cause, named := core.CauseTurnEnded, ""
	switch {
	case failed:
		detail, cause = core.StallFailedPrefix+detail, core.CauseRunFailed
	case unanswered != "":
		detail, cause, named = unanswered, core.CauseUnansweredQuestion, qid
	case stalledKid != "":
		detail, cause = stalledKid, core.CauseStalledSubtask
	}
	ch.escalate(ctx, t, role, detail, cause, named)
}

// unansweredChildQuestion describes the oldest pending question a child
// addressed to taskID, and gives its id, or "". Questions live in message
// meta, their single source of truth, so the store is asked, not the cache.
func (ch *Chain) unansweredChildQuestion(ctx context.Context, taskID string) (string, string) {
	pending, err := ch.k.db.PendingQuestions(ctx)
	if err != nil {
		ch.k.log.Error("read pending questions", "task", taskID, "err", err)
		return "", ""
	}
	for _, m := range pending {
		q, err := parseQuestion(m)
		if err != nil || q.Kind != core.QuestionParent || q.ParentTaskID != taskID {
			continue
		}
		title := ""
		if c, ok := ch.k.cached(m.TaskID); ok {
			title = " (" + c.Title + ")"
		}
		return fmt.Sprintf("%s%s from subtask %s%s: the turn ended without answering it (message_task_kandev with reply_to_question_id) or relaying it, and the subtask waits on it.\n\n%s",
			core.StallUnansweredPrefix, q.QuestionID, m.TaskID, title, truncateRunes(m.Text, 1500)), q.QuestionID
	}
	return "", ""
}

// holdingSubtasks counts the open subtasks that hold taskID (their
// finishing will wake it), and describes the first one that cannot: a
// subtask stalled and reported to taskID (reportStallToCreator), still
// with its role, with nothing running or queued, waits on taskID to act.
func (ch *Chain) holdingSubtasks(taskID string) (int, string) {
	cv := ch.k.cache.rlock()
	defer cv.runlock()
	n, stalled := 0, ""
	for _, c := range cv.children[taskID] {
		ct := cv.tasks[c]
		if ct == nil || ct.Archived || ct.Status.Terminal() {
			continue
		}
		if reportedStall(ct) {
			if stalled == "" {
				stalled = fmt.Sprintf("%s%s (%s) was reported to this task and the turn ended without acting on it (message it, hand it on, stop it or sign it off); nothing else runs in the tree.\n\n%s",
					core.StallSubtaskPrefix, ct.ID, ct.Title, truncateRunes(ct.Stalled.Detail, 1500))
			}
			continue
		}
		n++
	}
	return n, stalled
}

// reportedStall: a subtask that stalled, went to nobody but its creating
// task (it stays with its role), and has nothing to move it.
func reportedStall(t *core.Task) bool {
	if t.Stalled == nil || t.Stalled.Reason != "Stalled" || t.Assignee == nil || !t.Assignee.IsRole() ||
		t.Halted || t.Queued > 0 || t.PendingQuestion != nil {
		return false
	}
	return t.Session == nil || !t.Session.State.Live() || t.Session.State == core.SessionWaitingForInput
}

func (ch *Chain) openSubtasks(taskID string) int {
	cv := ch.k.cache.rlock()
	defer cv.runlock()
	n := 0
	for _, c := range cv.children[taskID] {
		if ct := cv.tasks[c]; ct != nil && !ct.Archived && !ct.Status.Terminal() {
			n++
		}
	}
	return n
}

// escalate hands a stalled task up: to the role's manager; without one, to
// the person who last handed it over, else its creator when a person; for a
// task an agent created, the creating task's assignee is woken with the
// report (see docs/decisions/0003-escalation-targets.md). With none of
// these the task stays where it is and the daemon logs it. named is the
// subtask's question the stall names (Stall.QuestionID), or "".
func (ch *Chain) escalate(ctx context.Context, t core.Task, role, detail string, cause core.StallCause, named string) {
	var target *core.Ref
	if r, err := ch.roles.roleOf(ctx, role); err == nil {
		target = roleFromStore(r).ReportsTo
	}
	reason := "Stalled"
	// A turn that ended normally and goes back to the person who handed
	// the task over or created it is their turn again, not an escalation
	// (ADR 0025). A failed run or a child's question left unanswered stays
	// an alarm wherever it goes.
	normal := !cause.Alarm()
	if target == nil && t.HandedBy != nil && t.HandedBy.IsPerson() {
		target = t.HandedBy
		if normal {
			reason = core.StallReturned
		}
	}
	if target == nil && t.CreatedBy.IsPerson() {
		target = &t.CreatedBy.Ref
		if normal {
			reason = core.StallReturned
		}
	}
	if target != nil {
		if _, err := ch.handoff(ctx, t, *target, roleRef(role), detail, &core.Stall{Reason: reason, Failed: cause == core.CauseRunFailed, Cause: cause, QuestionID: named}); err != nil {
			ch.k.log.Error("escalate stalled task", "task", t.ID, "from", role, "to", target.String(), "err", err)
		}
		return
	}
	if t.CreatedBy.IsTask() {
		if p, ok := ch.k.cached(t.CreatedBy.Name); ok && !p.Archived && !p.Status.Terminal() {
			ch.reportStallToCreator(ctx, t, p, role, detail, cause, named)
			return
		}
	}
	ch.markStuck(ctx, t, role, detail, cause, named)
}

// markStuck records a stall that has nowhere to go (ADR 0007): the task
// stays with its role, marked Stuck, and its queue waits for explicit
// input from the operator (or its parent), which clears the mark.
func (ch *Chain) markStuck(ctx context.Context, t core.Task, role, detail string, cause core.StallCause, named string) {
	ch.k.log.Warn("stalled task has nowhere to go; it stays where it is, marked stuck", "task", t.ID, "role", role)
	now := time.Now().UTC()
	stalled := stallJSON(core.Stall{Reason: core.StallStuck, From: core.ByRef(core.RoleRef(role)), Detail: truncateRunes(detail, 2000), At: now,
		Failed: cause == core.CauseRunFailed, Cause: cause, QuestionID: named})
	err := ch.k.commit(ctx, func(tx *store.Tx, c *changes) error {
		c.touch(t.ID)
		if err := tx.SetStalled(ctx, t.ID, stalled, now); err != nil {
			return err
		}
		return c.noteTx(ctx, tx, t.ID, core.MsgStatus, "kandev",
			fmt.Sprintf("stuck: role %s stalled on the task (%s), and there is no manager, hander or creator to escalate to; it waits for the operator",
				role, truncateRunes(orNone(detail), 200)), map[string]any{"reason": core.StallStuck})
	})
	if err != nil {
		ch.k.log.Error("mark stuck", "task", t.ID, "err", err)
	}
}

// reportStallToCreator marks a stalled agent-created task and wakes the
// creating task's assignee with the report. The task stays with its role.
func (ch *Chain) reportStallToCreator(ctx context.Context, t, creator core.Task, role, detail string, cause core.StallCause, named string) {
	now := time.Now().UTC()
	stalled := stallJSON(core.Stall{Reason: "Stalled", From: core.ByRef(core.RoleRef(role)), Detail: truncateRunes(detail, 2000), At: now,
		Failed: cause == core.CauseRunFailed, Cause: cause, QuestionID: named})
	report := prompt.StallReport{ChildID: t.ID, ChildTitle: t.Title, Role: role, Why: stallWhy(cause), Detail: detail}
	err := ch.k.commit(ctx, func(tx *store.Tx, c *changes) error {
		if err := tx.SetStalled(ctx, t.ID, stalled, now); err != nil {
			return err
		}
		if _, err := tx.Enqueue(ctx, noticeItem(store.QueueItem{TaskID: creator.ID, Priority: priorityNormal, Kind: itemStalled,
			Sender: roleRef(role), Text: detail, CreatedAt: now}, prompt.NoticeStallReport, report, map[string]any{"child_task_id": t.ID})); err != nil {
			return err
		}
		note, err := tx.InsertMessage(ctx, store.Message{TaskID: t.ID, Kind: string(core.MsgHandoff), Author: "kandev",
			Text: fmt.Sprintf("Stalled: reported to task %s, which created it", creator.ID),
			Meta: metaJSON(map[string]any{"reason": "Stalled", "reported_to": creator.ID}), CreatedAt: now, UpdatedAt: now})
		if err != nil {
			return err
		}
		c.addMessage(note)
		c.touch(t.ID)
		c.wake(creator.ID)
		return nil
	})
	if err != nil {
		ch.k.log.Error("report stall", "task", t.ID, "err", err)
	}
}

// wakesFor builds the wakes a task reaching done or cancelled causes: one
// for its parent (when the parent has been worked) and one for every task it
// blocked. Each is a turn of its own. A task whose own agent made the
// change (a parent signing its child off) gets no wake: it carries no news.
func (ch *Chain) wakesFor(ctx context.Context, t core.Task) []store.QueueItem {
	by := core.ActorFrom(ctx)
	news := func(id string) bool { return !agentOf(by, id) }
	var targets []string
	if t.ParentID != "" && news(t.ParentID) {
		if p, ok := ch.k.cached(t.ParentID); ok && !p.Archived && !p.Status.Terminal() && p.Session != nil {
			targets = append(targets, p.ID)
		}
	}
	if ids, err := ch.k.db.BlockedBy(ctx, t.ID); err == nil {
		for _, id := range ids {
			if b, ok := ch.k.cached(id); ok && !b.Archived && !b.Status.Terminal() && news(id) {
				targets = append(targets, id)
			}
		}
	}
	summary := ch.lastWords(ctx, t.ID, "")
	now := time.Now().UTC()
	var items []store.QueueItem
	for _, id := range targets {
		rel := "subtask"
		if id != t.ParentID {
			rel = "blocker"
		}
		open := ch.openSubtasks(id)
		if rel == "subtask" && open > 0 {
			open-- // this one, finishing now
		}
		wake := prompt.Wake{Relation: rel, TaskID: t.ID, Title: t.Title, Status: string(t.Status), Summary: summary, OpenSubtasks: open}
		items = append(items, noticeItem(store.QueueItem{TaskID: id, Priority: priorityNormal, Kind: itemWake,
			Sender: core.TaskRef(t.ID).String(), Text: summary, CreatedAt: now}, prompt.NoticeWake, wake,
			map[string]any{"finished_task_id": t.ID, "status": t.Status}))
	}
	return items
}

// lastWords is what a task's agent said last (in a session, if given).
// For a session it is the agent's own text in its last turn, or nothing:
// a stall record quotes it as the agent's last words, and kandev's handoff
// note (which carries kandev's own prompt text) is not what the agent said.
func (ch *Chain) lastWords(ctx context.Context, taskID, sessionID string) string {
	m, err := ch.k.db.LastMessageOfKind(ctx, taskID, string(core.MsgAgent))
	if sessionID != "" && (err != nil || m.SessionID != sessionID) {
		return ""
	}
	// Words from an earlier turn are not the last turn's: a turn that said
	// nothing has no last words.
	if sessionID != "" {
		if p, perr := ch.k.db.LastMessageOfKind(ctx, taskID, string(core.MsgPrompt)); perr == nil && p.SessionID == sessionID && p.Seq > m.Seq {
			return ""
		}
	}
	if err != nil {
		if h, herr := ch.k.db.LastMessageOfKind(ctx, taskID, string(core.MsgHandoff)); herr == nil {
			return h.Text
		}
		return ""
	}
	return truncateRunes(m.Text, 2000)
}

// sweep runs the stall checks a crash cut short, once at startup.
func (ch *Chain) sweep(ctx context.Context) error {
	// The tasks the start loaded: at 100,000 tasks, asking the table again
	// (needs_check and waiting have no index) was a tenth of the start.
	ids := ch.k.cache.takeUnchecked()
	for _, id := range ids {
		t, ok := ch.k.cached(id)
		if !ok || t.Session == nil {
			_ = ch.k.db.SetNeedsCheck(ctx, id, false)
			continue
		}
		failed := t.Session.State == core.SessionFailed
		detail := t.Session.Error
		if !failed {
			detail = ch.lastWords(ctx, id, t.Session.ID)
		}
		ch.k.log.Info("startup sweep: checking a task whose check was interrupted", "task", id)
		ch.stallCheck(ctx, id, t.Session.Role, failed, detail)
	}
	// Runs that could not start may be runnable now (a CLI installed).
	// Found by walking the cache, not by a lookup per task (a tenth of
	// the start at 100,000 tasks), and kicked in task order.
	var waiting []string
	cv := ch.k.cache.rlock()
	found := map[string]bool{}
	for id, t := range cv.tasks {
		if t.WaitCause != core.WaitNone && !t.Archived {
			found[id] = true
		}
	}
	for _, id := range cv.order {
		if len(waiting) == len(found) {
			break
		}
		if found[id] {
			waiting = append(waiting, id)
		}
	}
	cv.runlock()
	for _, id := range waiting {
		ch.turns.kick(id)
	}
	// Starts the last daemon acknowledged but never delivered (it died
	// in between) go ahead; the turn loop skips tasks held meanwhile.
	started, err := ch.k.db.StartedQueues(ctx)
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	for _, id := range started {
		ch.turns.kick(id)
	}
	return nil
}

// stallJSON is a stall as the tasks.stalled column stores it.
func stallJSON(st core.Stall) string { return st.StoredJSON() }
