package engine

// Turn delivery: the per-task turn loop takes the head of the queue,
// makes sure a run can take it, delivers it as one turn and records its end.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/store"
)

// Queue priorities: front-of-line items (interrupts, redeliveries) go first.
const (
	priorityFront  = 0
	priorityNormal = 1
)

// Queue item kinds. Each kind renders its own prompt at delivery.
const (
	itemMessage   = "message"   // a message from the operator or another task
	itemKickoff   = "kickoff"   // start with nothing to say: work on the task
	itemRedeliver = "redeliver" // a prompt whose turn a daemon exit cut short
	itemQuestion  = "question"  // a child's question, delivered to its parent
	itemAnswer    = "answer"    // the answer to this task's own question
)

// kick starts the task's turn loop unless one is running. It never blocks.
func (tn *Turns) kick(id string) {
	rt := tn.runs.runtime(id)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.busy {
		return
	}
	if !tn.k.live.unlessClosing(func() { tn.k.wg.Add(1) }) {
		return
	}
	rt.busy = true
	rt.loopFence = rt.fence
	go tn.turnLoop(rt)
}

// turnLoop delivers queued items one turn at a time until nothing is
// deliverable.
func (tn *Turns) turnLoop(rt *taskRuntime) {
	defer tn.k.wg.Done()
	if tn.loopEnded != nil {
		defer tn.loopEnded(rt.id)
	}
	for {
		item, run, fence, t, ok := tn.nextTurn(rt)
		if !ok {
			return
		}
		tn.runTurn(rt, run, item, fence, t)
	}
}

// held says why a task's queue may not be delivered now, or "".
func (tn *Turns) held(t core.Task) string {
	switch {
	case t.Archived:
		return "archived"
	case t.Halted:
		return "stopped"
	case t.Status.Terminal():
		// A finished task's leftover queue waits for its reopen (ADR 0022).
		return string(t.Status)
	case t.PendingQuestion != nil:
		return "waiting on question " + t.PendingQuestion.ID
	case tn.spend.budgetHold(t) != "":
		return "budget of task " + tn.spend.budgetHold(t) + " reached"
	case tn.spend.limitHold(t) != "":
		return tn.spend.limitHold(t)
	case t.Stuck():
		// A run that failed again would only fail again: explicit input
		// (the operator's, or its parent's) clears the mark first.
		return "stuck: nobody to escalate to"
	case t.Assignee == nil || !t.Assignee.IsRole():
		return "waiting on someone else"
	}
	return ""
}

// nextTurn picks the next item and makes sure a run exists to take it.
// When it returns false the loop is over and rt.busy is cleared.
func (tn *Turns) nextTurn(rt *taskRuntime) (store.QueueItem, *liveRun, uint64, core.Task, bool) {
	ctx := tn.k.baseCtx
	rt.mu.Lock()
	stop := func() (store.QueueItem, *liveRun, uint64, core.Task, bool) {
		rt.busy = false
		rt.mu.Unlock()
		return store.QueueItem{}, nil, 0, core.Task{}, false
	}
	if tn.k.isClosing() || rt.paused {
		rt.paused = false
		return stop()
	}
	// The store, not the cache, decides: every change commits before the
	// cache is refreshed, and a stop, a handoff or a question committed a
	// moment ago must hold this turn.
	t, err := tn.k.storedTask(ctx, rt.id)
	if err != nil || tn.held(t) != "" {
		return stop()
	}
	items, err := tn.k.db.Queue(ctx, rt.id)
	if err != nil {
		tn.k.log.Error("read queue", "task", rt.id, "err", err)
		return stop()
	}
	if len(items) == 0 {
		return stop()
	}
	item, fence, run := items[0], rt.fence, rt.run
	rt.loopFence = fence
	if run != nil && run.role != t.Assignee.Name {
		// The task changed hands: the old role's run ends, its session kept.
		tn.runs.endRunLocked(run, core.SessionCompleted, "the task was handed to role "+t.Assignee.Name)
		run = nil
	}
	rt.mu.Unlock()

	if run == nil {
		run, err = tn.runs.launch(rt, fence, t)
		if err != nil {
			rt.mu.Lock()
			rt.busy = false
			rt.mu.Unlock()
			var un *unservedError
			var rf *runFailedError
			switch {
			case errors.As(err, &un):
				tn.k.setUnserved(rt.id, un.cause, un.reason)
				tn.hosts.recheckPlacement(rt.id)
			case errors.As(err, &rf):
				// The item stays queued for whoever takes the task next; the
				// loop is over, so a failing agent is not launched again until
				// new input, an escalation or a handoff kicks the task.
				if tn.k.opts.AfterTurnEnd != nil {
					tn.k.opts.AfterTurnEnd(rt.id)
				}
				tn.afterTurn(rt.id, turnOutcome{role: rf.role, failed: true, err: rf.reason})
			}
			var we *writeError
			if errors.As(err, &we) {
				rt.mu.Lock()
				tn.deliveryFailed(rt, we.err)
				rt.paused = false // this loop is already ending
				rt.mu.Unlock()
				tn.k.refreshQuiet(rt.id)
			}
			return store.QueueItem{}, nil, 0, core.Task{}, false
		}
	}
	return item, run, fence, t, true
}

// runTurn delivers one item as a turn and records how it ended.
func (tn *Turns) runTurn(rt *taskRuntime, run *liveRun, item store.QueueItem, fence uint64, t core.Task) {
	ctx := tn.k.baseCtx
	rt.mu.Lock()
	if rt.fence != fence || rt.run != run {
		rt.mu.Unlock()
		return
	}
	body := tn.renderItem(ctx, t, item)
	delivered, err := tn.recordDelivery(ctx, t, run, item, body)
	if err != nil {
		tn.deliveryFailed(rt, err)
		rt.mu.Unlock()
		tn.k.log.Error("deliver queued message", "task", t.ID, "err", err)
		tn.k.refreshQuiet(t.ID)
		return
	}
	tn.deliveryDone(rt)
	rt.turn = &turnState{run: run}
	if run.idle != nil {
		run.idle.Stop()
		run.idle = nil
	}
	run.rec.resetTurn()
	rt.mu.Unlock()
	tn.k.announce(delivered)

	text := tn.promptText(ctx, t, run, body)
	run.prompts++
	stopReason, promptErr := run.proc.Prompt(ctx, text)
	// Every update of the turn came before its response: what waits of
	// the streamed output is written before the turn's end.
	run.rec.flush()
	// No token counts of the agent's own: its estimate stands, all of it.
	run.rec.settleEstimate()
	tn.turnEnded(ctx, rt, run, t, stopReason, promptErr)
}

// recordDelivery takes item off the queue and records it as the prompt
// of run's next turn, the task in progress, in one transaction.
func (tn *Turns) recordDelivery(ctx context.Context, t core.Task, run *liveRun, item store.QueueItem, body string) (changes, error) {
	now := time.Now().UTC()
	return tn.k.tx(ctx, func(tx *store.Tx, c *changes) error {
		if err := tx.DeleteQueueItem(ctx, item.ID); err != nil {
			return err
		}
		meta, _ := json.Marshal(map[string]any{"delivery": item.Kind, "queue_id": item.ID, "rendered": body})
		// A notice enters the conversation as the agent read it; its data
		// stays with the queue row, the rendered text says it all.
		text, itemMeta := item.Text, item.Meta
		if _, ok := queuedNotice(item); ok {
			text, itemMeta = body, dropMetaKey(item.Meta, "data")
		}
		added, err := tx.InsertMessage(ctx, store.Message{TaskID: t.ID, SessionID: run.sessionID, Kind: string(core.MsgPrompt),
			Author: item.Sender, Text: text, Meta: mergeMeta(string(meta), itemMeta), CreatedAt: now, UpdatedAt: now})
		if err != nil {
			return err
		}
		c.addMessage(added)
		c.session(run.sessionID)
		c.touch(t.ID)
		running := string(core.SessionRunning)
		if err := tx.UpdateSession(ctx, run.sessionID, store.SessionUpdate{State: &running, AddTurn: true}, now); err != nil {
			return err
		}
		if core.CheckTransition(t.Status, core.StatusInProgress) == nil && t.Status != core.StatusInProgress {
			return tx.SetTaskStatus(ctx, t.ID, string(core.StatusInProgress), now)
		}
		return nil
	})
}

// promptText is what the agent reads for body: on a run's first prompt,
// the preamble first (and the replayed history is then done with).
func (tn *Turns) promptText(ctx context.Context, t core.Task, run *liveRun, body string) string {
	if run.prompts != 0 {
		return body
	}
	text := body
	if pre, err := tn.preamble(t, run.set); err == nil {
		text = pre + "\n" + body
	} else {
		tn.k.log.Error("render preamble", "task", t.ID, "err", err)
	}
	tn.runs.replayDone(ctx, run)
	return text
}

// turnEnded records how run's turn ended (stopped under it, its host
// lost, failed, or ended with stopReason) and what follows: the run idles,
// ends, or the stall check runs.
func (tn *Turns) turnEnded(ctx context.Context, rt *taskRuntime, run *liveRun, t core.Task, stopReason acp.StopReason, promptErr error) {

	rt.mu.Lock()
	turn := rt.turn
	rt.turn = nil
	// Under the task lock: an answer arriving now goes to the queue.
	tn.questions.dropWaitingCall(ctx, t.ID, "the turn that asked ended")
	// A permission request the agent left open past its turn's end can no
	// longer be answered: no question stays pending on a finished turn.
	tn.questions.stalePermission(ctx, t.ID, run.sessionID, "the turn ended before an answer")
	if rt.run != run {
		// Stopped, failed or shut down while the turn ran; whoever ended
		// the run recorded why.
		rt.mu.Unlock()
		tn.endTurn(t.ID, run.sessionID, "cancelled", "", nil, false)
		return
	}
	if after, ok := tn.hosts.hostLostLocked(run, t, promptErr); ok {
		rt.mu.Unlock()
		after()
		tn.endTurn(t.ID, run.sessionID, "cancelled", promptErr.Error(), nil, false)
		tn.k.refreshQuiet(t.ID)
		return
	}
	if promptErr != nil {
		reason := "turn failed: " + promptErr.Error()
		tn.endTurn(t.ID, run.sessionID, "error", promptErr.Error(), nil, true)
		tn.runs.endRunLocked(run, core.SessionFailed, reason)
		rt.mu.Unlock()
		tn.afterTurn(t.ID, turnOutcome{role: run.role, failed: true, err: promptErr.Error()})
		return
	}
	reason := string(stopReason)
	if turn != nil && turn.forQuestion && stopReason == acp.StopReasonCancelled {
		reason = "ended_for_question"
	}
	waiting := string(core.SessionWaitingForInput)
	interrupted := turn != nil && turn.interrupted
	tn.endTurn(t.ID, run.sessionID, reason, "", &waiting, !interrupted)
	// Every handoff goes through releaseRun, which marks the running turn.
	if turn != nil && turn.handedOff {
		tn.runs.endRunLocked(run, core.SessionCompleted, "the task was handed on")
	} else {
		tn.runs.armIdle(run)
	}
	rt.mu.Unlock()
	if tn.k.opts.AfterTurnEnd != nil {
		tn.k.opts.AfterTurnEnd(t.ID)
	}
	tn.afterTurn(t.ID, turnOutcome{role: run.role, interrupted: interrupted, sessionID: run.sessionID})
}

// Bounds of the wait between attempts to deliver a message whose delivery
// could not be written.
const (
	retryFirst = 500 * time.Millisecond
	retryMax   = 30 * time.Second
)

// deliveryFailed pauses a task's turn loop after its delivery could not be
// written (a full disk, most likely): rather than spin on the same item,
// the task says why in its waiting field, kept in memory because the
// store may not take it, and tries again after a growing wait. No event
// says the disk has space again, so this one thing is retried on a timer.
// rt.mu must be held.
func (tn *Turns) deliveryFailed(rt *taskRuntime, err error) {
	rt.paused = true
	if rt.retry == 0 {
		rt.retry = retryFirst
	} else if rt.retry = 2 * rt.retry; rt.retry > retryMax {
		rt.retry = retryMax
	}
	tn.k.deferred.set(rt.id, fmt.Sprintf("cannot deliver the next message: %v; trying again every %s at most", err, retryMax))
	id := rt.id
	time.AfterFunc(rt.retry, func() { tn.kick(id) })
}

// deliveryDone clears what deliveryFailed set once a delivery was
// written. rt.mu must be held.
func (tn *Turns) deliveryDone(rt *taskRuntime) {
	if rt.retry == 0 {
		return
	}
	rt.retry = 0
	tn.k.deferred.clear(rt.id)
}

// endTurn records a turn's end, the session's new state and, when the
// stall check must follow, the outbox flag, in one transaction: a crash
// between the turn's end and its check leaves the flag for the sweep.
func (tn *Turns) endTurn(taskID, sessionID, stopReason, errText string, state *string, check bool) {
	ctx := context.Background()
	text := "turn ended: " + stopReason
	if errText != "" {
		text += ": " + errText
	}
	now := time.Now().UTC()
	err := tn.k.commit(ctx, func(tx *store.Tx, c *changes) error {
		m, err := tx.InsertMessage(ctx, store.Message{TaskID: taskID, SessionID: sessionID, Kind: string(core.MsgTurnEnd),
			Author: "kandev", Text: text, Meta: metaJSON(map[string]any{"stop_reason": stopReason, "error": errText}),
			CreatedAt: now, UpdatedAt: now})
		if err != nil {
			return err
		}
		c.addMessage(m)
		if state != nil {
			if err := tx.UpdateSession(ctx, sessionID, store.SessionUpdate{State: state}, now); err != nil {
				return err
			}
			c.session(sessionID)
		}
		if check {
			return tx.SetNeedsCheck(ctx, taskID, true)
		}
		return nil
	})
	if err != nil {
		tn.k.log.Error("record turn end", "task", taskID, "err", err)
	}
}

// turnOutcome is what the end of a turn tells the rules that run after it.
type turnOutcome struct {
	role        string
	sessionID   string
	failed      bool
	err         string
	interrupted bool
}

// afterTurn runs the stall check (rule 4) once a turn ended or a run
// failed. A turn's end changes no status by itself: a task held by its
// question, its subtasks or its blockers stays in_progress; only explicit
// transitions (a handoff, a stop, an escalation, a status set) move it.
// The cache is refreshed after the check, so a reader never sees the run
// ended without its escalation.
func (tn *Turns) afterTurn(taskID string, out turnOutcome) {
	ctx := context.Background()
	tn.workspaces.importWork(ctx, taskID, out.sessionID)
	if out.interrupted {
		tn.k.refreshQuiet(taskID)
		return // the interrupt message is next in line
	}
	detail := out.err
	if !out.failed {
		detail = tn.chain.lastWords(ctx, taskID, out.sessionID)
	}
	tn.chain.stallCheck(ctx, taskID, out.role, out.failed, detail)
	tn.k.refreshQuiet(taskID)
}

// requeueOpenPrompt puts the last prompt of a session back at the front of
// the queue when its turn never ended. It is idempotent: a redelivery of
// the same prompt (by original_seq) already queued is not queued again.
func (tn *Turns) requeueOpenPrompt(ctx context.Context, q store.Queries, taskID, sessionID string) error {
	last, ok, err := openPrompt(ctx, q, taskID, sessionID)
	if !ok {
		return err
	}
	// A turn cut short while it waited on the operator's answer continues
	// with that answer; repeating its prompt would only ask again. A
	// permission question is not such an answer: its request died with
	// the run, so the prompt is delivered again.
	if pq, err := q.PendingQuestion(ctx, taskID); err == nil && pq.SessionID == sessionID {
		if pm, err := parseQuestion(pq); err != nil || pm.Kind != core.QuestionPermission {
			return nil
		}
	}
	var meta struct {
		Delivery string `json:"delivery"`
	}
	_ = json.Unmarshal([]byte(last.Meta), &meta)
	redeliver, _ := json.Marshal(map[string]any{"original_kind": meta.Delivery, "original_seq": last.Seq})
	_, err = q.Enqueue(ctx, store.QueueItem{TaskID: taskID, Priority: priorityFront, Kind: itemRedeliver,
		Sender: last.Author, Text: last.Text, Meta: string(redeliver), CreatedAt: time.Now().UTC()})
	return err
}

// openPrompt is the last prompt of a session when its turn never ended and
// no redelivery of it (a queue item whose original_seq is its seq) is
// queued yet: the prompt a cut turn must have delivered again. ok is false
// when there is none.
func openPrompt(ctx context.Context, q store.Queries, taskID, sessionID string) (store.Message, bool, error) {
	last, err := q.LastMessageOfKind(ctx, taskID, string(core.MsgPrompt))
	if err != nil || last.SessionID != sessionID {
		return store.Message{}, false, nil
	}
	if end, err := q.LastMessageOfKind(ctx, taskID, string(core.MsgTurnEnd)); err == nil && end.Seq > last.Seq {
		return store.Message{}, false, nil // the turn had ended
	}
	queued, err := q.Queue(ctx, taskID)
	if err != nil {
		return store.Message{}, false, err
	}
	for _, it := range queued {
		var m struct {
			OriginalSeq int64 `json:"original_seq"`
		}
		if it.Kind == itemRedeliver && json.Unmarshal([]byte(it.Meta), &m) == nil && m.OriginalSeq == last.Seq {
			return store.Message{}, false, nil
		}
	}
	return last, true, nil
}

// Turns is the turns area (turns.go, render.go): a task's turn loop,
// which takes the next queued item, renders it for the agent, runs the
// turn on the task's live run and records how it ended.
type Turns struct {
	k *kernel
	// loopEnded lets a test wait for a task's turn loop to end: the one
	// moment after which nothing more is delivered until the next kick.
	loopEnded func(id string)

	chain      *Chain      // the stall check after a turn
	hosts      *Hosts      // a turn waiting for its host
	questions  *Questions  // the questions a turn's end settles
	runs       *Runs       // the live run a turn needs
	spend      *Spend      // the budget a turn may not pass
	workspaces *Workspaces // the review a turn's end asks for
}
