package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/prompt"
	"github.com/kandev/kandev/store"
)

// Messages is the engine's messages and queues area: what a person or an
// agent sends a task. A start (StartTask: the prompt or a kickoff queued,
// a stop lifted), a message (MessageTask: queued or interrupting, a review
// with it, an answer to a question handed to the questions, a task that
// waits on a person handed back), the conversation (Conversation), the
// queue's view and what a person drops from it (queue.go: TaskQueue,
// DropQueued), api.Client's operations, which the daemon routes here;
// the input a task cannot take (deliverable) and the queue caps
// (queueRoom). Its fields are all it may touch: the kernel, the engine's
// wait group, and what other areas give it, each named.
//
// Locks: none of its own. StartTask, MessageTask and DropQueued hold the
// task's rt.mu over the store's reads and the transaction (tx; the
// questions' supersedeTx inside it), and MessageTask over the interrupt
// (the running turn's cancel started under procWG) and held (the cache's
// read lock, through the spend area's budgetHold); each announces once
// rt.mu is released. A review is planned (planReview) and a task handed
// back (handoff) before rt.mu is taken; Conversation and TaskQueue take
// no lock.
type Messages struct {
	k *kernel
	// procWG is the engine's wait group of process teardowns and timers
	// (Close waits on it): an interrupt's cancel of the running turn runs
	// under it.
	procWG *sync.WaitGroup

	// What the other areas give it (compose.go):
	// task resolves a task reference (kernel.go); authorized resolves it
	// and asks may (authorize.go).
	task       func(ctx context.Context, ref string) (core.Task, error)
	authorized func(ctx context.Context, a core.Actor, ref string, act Action) (core.Task, error)
	// may is the authorizer (authorize.go): who starts, messages,
	// interrupts and drops queued items; holder (authorize.go) is whether
	// the actor holds the task, so a start hands it back.
	may    func(a core.Actor, act Action, t core.Task) error
	holder func(a core.Actor, t core.Task) bool
	// held is the runs' (turns.go): why a task's queue may not be
	// delivered now, so a message says whether its turn started.
	held func(t core.Task) string
	// supersedeTx and replyToQuestion are the questions' (questions.go):
	// explicit input supersedes a pending question; a reply answers one.
	supersedeTx     func(ctx context.Context, tx *store.Tx, t core.Task, actor core.Actor, c *changes) error
	replyToQuestion func(ctx context.Context, child core.Task, qid, text string) (api.MessageResult, error)
	// handoff is the handoffs' (handoff.go): a person's message or start
	// hands a task that waits on a person back to its agent.
	handoff func(ctx context.Context, t core.Task, target core.Ref, hander, message string, stall *core.Stall) (api.HandoffResult, error)
	// planReview is the workspaces area's (review.go): review comments
	// checked against the task's diff before anything is written.
	planReview func(ctx context.Context, t core.Task, actor core.Actor, text string, in []api.ReviewCommentInput) (reviewPlan, error)
}

// StartTask serves api.Client's operation of that name: queue the prompt (or a kickoff when
// there is nothing to say), lift a stop, and start the turn loop.
func (ms *Messages) StartTask(ctx context.Context, ref string, in api.StartTaskInput) (core.Task, error) {
	actor := core.ActorFrom(ctx)
	t, err := ms.authorized(ctx, actor, ref, ActStart)
	if err != nil {
		return core.Task{}, err
	}
	if err := ms.deliverable(t); err != nil {
		return core.Task{}, err
	}
	text := strings.TrimSpace(in.Prompt)
	if t.Assignee != nil && !t.Assignee.IsRole() {
		// Starting a task that waits on you hands it back to its agent.
		if personActs(actor) && ms.holder(actor, t) && t.Session != nil {
			if text == "" {
				text = "Continue work on the task."
			}
			if _, err := ms.handBackWithMessage(ctx, t, actor, text); err != nil {
				return core.Task{}, err
			}
			return ms.task(ctx, t.ID)
		}
		return core.Task{}, core.Errorf(core.CodeConflict, "task %s is with %s %s, not an agent; hand it to a role to start it (kandev task handoff %s --to ROLE)",
			t.ID, t.Assignee.Kind, t.Assignee.Name, t.ID)
	}
	rt := ms.k.live.runtime(t.ID)
	rt.mu.Lock()
	now := time.Now().UTC()
	c, err := ms.k.tx(ctx, func(tx *store.Tx, c *changes) error {
		c.wake(t.ID)
		if text != "" {
			if err := ms.supersedeTx(ctx, tx, t, actor, c); err != nil {
				return err
			}
			if _, err := tx.Enqueue(ctx, store.QueueItem{TaskID: t.ID, Priority: priorityNormal, Kind: itemMessage,
				Sender: actor.String(), Text: text, Meta: startMeta, CreatedAt: now}); err != nil {
				return err
			}
		} else if rt.run == nil && !rt.busy && t.Queued == 0 && t.PendingQuestion == nil {
			if _, err := tx.Enqueue(ctx, store.QueueItem{TaskID: t.ID, Priority: priorityNormal, Kind: itemKickoff,
				Sender: actor.String(), Text: "Start work on the task.", Meta: startMeta, CreatedAt: now}); err != nil {
				return err
			}
		}
		if t.Stuck() {
			if err := tx.SetStalled(ctx, t.ID, "", now); err != nil {
				return err
			}
		}
		if t.Halted {
			return tx.SetTaskHalted(ctx, t.ID, false, now)
		}
		return nil
	})
	rt.mu.Unlock()
	if err != nil {
		return core.Task{}, mapStoreErr(err, "task "+t.ID)
	}
	ms.k.announce(c)
	return ms.task(ctx, t.ID)
}

// deliverable refuses input to tasks that cannot take a turn. Done and
// cancelled follow one rule (ADR 0022): a start, a message or a handoff
// does not reopen a finished task behind the operator's back; reopening is
// its own, explicit step.
func (ms *Messages) deliverable(t core.Task) error {
	switch {
	case t.Archived:
		return core.Errorf(core.CodeConflict, "task %s is archived", t.ID)
	case t.Status.Terminal():
		return core.Errorf(core.CodeConflict, "task %s is %s; reopen it first (kandev task status %s todo)", t.ID, t.Status, t.ID)
	case t.Workspace != nil && t.Workspace.Mode == core.WorkspaceDiscarded:
		// Its agent would start in a directory that is gone (and the
		// failure would blame the agent's binary).
		return core.Errorf(core.CodeConflict, "task %s's worktree %s was discarded (kandev task discard): its agent has nowhere to work; create a new task for more work, or cancel this one (kandev task status %s cancelled)",
			t.ID, t.Workspace.Dir, t.ID)
	}
	return nil
}

// MessageTask serves api.Client's operation of that name: the input checked (messageInput),
// the task resolved and the sender allowed, a reply handed to the
// questions, a review planned (messageReview), a task that waits on a
// person handed back, else the message queued (queueMessage).
func (ms *Messages) MessageTask(ctx context.Context, ref string, in api.MessageInput) (api.MessageResult, error) {
	actor := core.ActorFrom(ctx)
	text, delivery, err := messageInput(in)
	if err != nil {
		return api.MessageResult{}, err
	}
	t, err := ms.authorized(ctx, actor, ref, ActMessage)
	if err != nil {
		return api.MessageResult{}, err
	}
	if in.ReplyTo != "" {
		return ms.replyToQuestion(ctx, t, in.ReplyTo, text)
	}
	explicit := steers(actor, t)
	if delivery == api.DeliveryInterrupt {
		if err := ms.may(actor, ActInterrupt, t); err != nil {
			return api.MessageResult{}, err
		}
	}
	if agentOf(actor, t.ID) {
		return api.MessageResult{}, core.Errorf(core.CodeValidation, "task %s is your own task; message other tasks", t.ID)
	}
	if err := ms.deliverable(t); err != nil {
		return api.MessageResult{}, err
	}
	review, text, err := ms.messageReview(ctx, t, actor, text, in.Comments)
	if err != nil {
		return api.MessageResult{}, err
	}
	if personActs(actor) && t.Assignee != nil && t.Assignee.IsPerson() && delivery == api.DeliveryQueued {
		if review != nil {
			return ms.handBackReview(ctx, t, actor, *review)
		}
		return ms.handBackWithMessage(ctx, t, actor, text)
	}
	return ms.queueMessage(ctx, t, actor, text, delivery, explicit, review)
}

// messageInput checks a message's input before the task is looked up: its
// text (trimmed), and its delivery (queued by default).
func messageInput(in api.MessageInput) (string, api.Delivery, error) {
	text := strings.TrimSpace(in.Text)
	if text == "" && len(in.Comments) == 0 {
		return "", "", core.Errorf(core.CodeValidation, "message text is required")
	}
	if in.ReplyTo != "" && len(in.Comments) > 0 {
		return "", "", core.Errorf(core.CodeValidation, "an answer to a question carries no review comments; send the review as its own message")
	}
	delivery := in.Delivery
	if delivery == "" {
		delivery = api.DeliveryQueued
	}
	if delivery != api.DeliveryQueued && delivery != api.DeliveryInterrupt {
		return "", "", core.Errorf(core.CodeValidation, "delivery_mode %q: want queued or interrupt", delivery)
	}
	return text, delivery, nil
}

// messageReview plans a message's review comments, if it has any, and
// gives a review without text its own; nil and the text unchanged without
// comments.
func (ms *Messages) messageReview(ctx context.Context, t core.Task, actor core.Actor, text string, comments []api.ReviewCommentInput) (*reviewPlan, string, error) {
	var review *reviewPlan
	if len(comments) > 0 {
		// Checked against the diff before anything is written: a comment
		// off the diff refuses the whole review.
		p, err := ms.planReview(ctx, t, actor, text, comments)
		if err != nil {
			return nil, "", err
		}
		review = &p
		if text == "" {
			text = fmt.Sprintf("review: %d comments on the diff", len(p.rows))
		}
	}
	return review, text, nil
}

// queueMessage queues a message under the task's lock: the queue caps
// checked (queueRoom), the message (and a review's comments) written in
// one transaction, explicit input lifting what holds the task (steerTx),
// then the message's status (messageStatus) and the announce.
func (ms *Messages) queueMessage(ctx context.Context, t core.Task, actor core.Actor, text string, delivery api.Delivery, explicit bool, review *reviewPlan) (api.MessageResult, error) {
	rt := ms.k.live.runtime(t.ID)
	rt.mu.Lock()
	queue, err := ms.k.db.Queue(ctx, t.ID)
	if err != nil {
		rt.mu.Unlock()
		return api.MessageResult{}, mapStoreErr(err, "queue of "+t.ID)
	}
	if err := ms.queueRoom(t, queue, actor, explicit, delivery); err != nil {
		rt.mu.Unlock()
		return api.MessageResult{}, err
	}
	priority := priorityNormal
	if delivery == api.DeliveryInterrupt {
		priority = priorityFront
	}
	now := time.Now().UTC()
	var item store.QueueItem
	c, err := ms.k.tx(ctx, func(tx *store.Tx, c *changes) error {
		c.wake(t.ID)
		if explicit {
			if err := ms.steerTx(ctx, tx, t, actor, now, c); err != nil {
				return err
			}
		}
		var err error
		qi := store.QueueItem{TaskID: t.ID, Priority: priority, Kind: itemMessage,
			Sender: actor.String(), Text: text, Meta: metaJSON(map[string]any{"delivery_mode": string(delivery)}), CreatedAt: now}
		if review != nil {
			qi = noticeItem(qi, prompt.NoticeReview, review.notice, map[string]any{"delivery_mode": string(delivery)})
			if review.rows, err = addReviewRows(ctx, tx, review.rows); err != nil {
				return err
			}
		}
		item, err = tx.Enqueue(ctx, qi)
		return err
	})
	if err != nil {
		rt.mu.Unlock()
		return api.MessageResult{}, mapStoreErr(err, "message to "+t.ID)
	}
	res := api.MessageResult{TaskID: t.ID, Status: "queued", QueueID: item.ID}
	if review != nil {
		res.Comments = reviewComments(review.rows)
	}
	ms.messageStatus(rt, t, &res, queue, priority, delivery, explicit)
	rt.mu.Unlock()
	ms.k.announce(c)
	return res, nil
}

// steerTx is what explicit input (a person's, or the direct parent's)
// does in its message's transaction: a pending question superseded, a
// stop lifted, a stuck mark cleared.
func (ms *Messages) steerTx(ctx context.Context, tx *store.Tx, t core.Task, actor core.Actor, now time.Time, c *changes) error {
	if err := ms.supersedeTx(ctx, tx, t, actor, c); err != nil {
		return err
	}
	if t.Halted {
		if err := tx.SetTaskHalted(ctx, t.ID, false, now); err != nil {
			return err
		}
	}
	if t.Stuck() {
		if err := tx.SetStalled(ctx, t.ID, "", now); err != nil {
			return err
		}
	}
	return nil
}

// messageStatus says what became of a queued message: it interrupted the
// running turn, it starts one now, or it waits at its position. rt.mu
// must be held.
func (ms *Messages) messageStatus(rt *taskRuntime, t core.Task, res *api.MessageResult, queue []store.QueueItem, priority int, delivery api.Delivery, explicit bool) {
	switch {
	case delivery == api.DeliveryInterrupt && rt.turn != nil:
		// One step under the task lock: the message is first in line and the
		// running turn is cancelled, so the next turn is this message.
		rt.turn.interrupted = true
		run := rt.turn.run
		ms.procWG.Add(1)
		go func() {
			defer ms.procWG.Done()
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = run.proc.Cancel(cctx)
		}()
		res.Status = "interrupted"
	case !rt.busy && (explicit || !t.Halted) && ms.held(withoutQuestionIfExplicit(t, explicit)) == "" && len(queue) == 0:
		res.Status = "started"
	default:
		res.Position = positionOf(queue, priority) + 1
	}
}

// handBackWithMessage: a person's message to a task that waits on a person
// hands it back to the role that last worked it, with the message.
func (ms *Messages) handBackWithMessage(ctx context.Context, t core.Task, actor core.Actor, text string) (api.MessageResult, error) {
	target := core.RoleRef(t.Profile)
	if t.HandedBy != nil && t.HandedBy.IsRole() {
		target = *t.HandedBy
	} else if t.Session != nil && t.Session.Role != "" {
		target = core.RoleRef(t.Session.Role)
	}
	if _, err := ms.handoff(ctx, t, target, personRef(actor.Name), text, nil); err != nil {
		return api.MessageResult{}, err
	}
	return api.MessageResult{TaskID: t.ID, Status: "handed_back"}, nil
}

// handBackReview is handBackWithMessage for a review: the task goes back
// to its agent with the review as the handoff's message (rendered now, as
// a handoff's message is text), then the comments are kept. Two
// transactions, since the handoff commits its own: a failure between them
// leaves the agent with a review whose comments are not listed, and says so.
func (ms *Messages) handBackReview(ctx context.Context, t core.Task, actor core.Actor, p reviewPlan) (api.MessageResult, error) {
	body, err := prompt.RenderNotice(prompt.NoticeReview, p.notice)
	if err != nil {
		return api.MessageResult{}, core.Errorf(core.CodeInternal, "%v", err)
	}
	res, err := ms.handBackWithMessage(ctx, t, actor, body)
	if err != nil {
		return res, err
	}
	c, err := ms.k.tx(ctx, func(tx *store.Tx, c *changes) error {
		var err error
		p.rows, err = addReviewRows(ctx, tx, p.rows)
		return err
	})
	if err != nil {
		return res, core.Errorf(core.CodeInternal, "task %s was handed back with the review, but its comments were not kept: %v", t.ID, err)
	}
	ms.k.announce(c)
	res.Comments = reviewComments(p.rows)
	return res, nil
}

func addReviewRows(ctx context.Context, tx *store.Tx, rows []store.ReviewComment) ([]store.ReviewComment, error) {
	out := make([]store.ReviewComment, len(rows))
	for i, r := range rows {
		var err error
		if out[i], err = tx.AddReviewComment(ctx, r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func withoutQuestionIfExplicit(t core.Task, explicit bool) core.Task {
	if explicit {
		t.PendingQuestion = nil
		t.Halted = false
		if t.Stuck() {
			t.Stalled = nil
		}
	}
	return t
}

func positionOf(queue []store.QueueItem, priority int) int {
	n := 0
	for _, it := range queue {
		if it.Priority <= priority {
			n++
		}
	}
	return n
}

// queueRoom applies the queue caps (see core.QueueCap). Each sender is
// capped on its own; senders other than a person and the task's direct
// parent are also capped together, so that no agent, nor many of them,
// can fill a task's queue against the ones who steer it. A person's
// interrupt is never refused: it replaces the running turn rather than
// waiting behind the queue. (The direct parent's interrupts count against
// its own cap, so that no agent grows a queue without bound.)
func (ms *Messages) queueRoom(t core.Task, queue []store.QueueItem, actor core.Actor, explicit bool, delivery api.Delivery) error {
	if personActs(actor) && delivery == api.DeliveryInterrupt {
		return nil
	}
	sender := actor.String()
	own, others := 0, 0
	for _, it := range queue {
		if it.Kind != itemMessage {
			continue
		}
		if it.Sender == sender {
			own++
		}
		if !ms.explicitSender(t, it.Sender) {
			others++
		}
	}
	capN := ms.k.opts.QueueCap
	switch {
	case own >= capN:
		return core.Errorf(core.CodeConflict,
			"task %s already has %d messages queued from you (the cap is %d per sender); wait for it to take them", t.ID, own, capN).
			WithDetails(map[string]any{"queued": describeQueue(queue)})
	case !explicit && others >= capN:
		return core.Errorf(core.CodeConflict,
			"task %s already has %d messages queued from other tasks (the cap is %d); wait for it to take them", t.ID, others, capN).
			WithDetails(map[string]any{"queued": describeQueue(queue)})
	}
	return nil
}

// explicitSender: a stored sender that steers the task (a person, or the
// task's direct parent).
func (ms *Messages) explicitSender(t core.Task, sender string) bool {
	r, ok := core.ParseRef(sender)
	return ok && (r.IsPerson() || (t.ParentID != "" && r == core.TaskRef(t.ParentID)))
}

func describeQueue(queue []store.QueueItem) []map[string]any {
	out := make([]map[string]any, 0, len(queue))
	for _, it := range queue {
		out = append(out, map[string]any{"id": it.ID, "kind": it.Kind, "sender": it.Sender,
			"text": truncateRunes(it.Text, 80), "queued_at": it.CreatedAt})
	}
	return out
}

// Conversation serves api.Client's operation of that name.
func (ms *Messages) Conversation(ctx context.Context, ref string, in api.ConversationInput) (api.ConversationPage, error) {
	t, err := ms.task(ctx, ref)
	if err != nil {
		return api.ConversationPage{}, err
	}
	limit := in.Limit
	if limit <= 0 {
		limit = 50
	}
	if limit > 1000 {
		limit = 1000
	}
	if in.After < 0 || in.Before < -1 {
		return api.ConversationPage{}, core.Errorf(core.CodeValidation, "after must be 0 or more; before must be a sequence number or -1 for the tail")
	}
	if in.After > 0 && in.Before != 0 {
		return api.ConversationPage{}, core.Errorf(core.CodeValidation, "give after or before, not both")
	}
	page := api.ConversationPage{TaskID: t.ID, Messages: []core.Message{}, Next: in.After}
	var rows []store.Message
	if in.Before != 0 {
		before := in.Before
		if before == -1 {
			before = math.MaxInt64
		}
		rows, err = ms.k.db.MessagesBefore(ctx, t.ID, before, limit+1)
		if err != nil {
			return api.ConversationPage{}, mapStoreErr(err, "conversation of "+t.ID)
		}
		if len(rows) > limit {
			rows, page.Older = rows[1:], true
		}
	} else {
		rows, err = ms.k.db.Messages(ctx, t.ID, in.After, limit+1)
		if err != nil {
			return api.ConversationPage{}, mapStoreErr(err, "conversation of "+t.ID)
		}
		if len(rows) > limit {
			rows, page.More = rows[:limit], true
		}
		page.Older = in.After > 0
	}
	for i, m := range rows {
		page.Messages = append(page.Messages, messageFromStore(m))
		page.Next = m.Seq
		if i == 0 {
			page.First = m.Seq
		}
	}
	return page, nil
}

func metaJSON(m map[string]any) string {
	b, err := json.Marshal(m)
	if err != nil {
		return "{}"
	}
	return string(b)
}
