package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/core/prompt"
	"github.com/kandev/kandev/store"
)

// Questions is the engine's questions and permissions area (rule 2, ADR
// 0024): a task's user question (askUser) and an autopilot child's
// question for its parent (askParent, answered by replyToQuestion), the
// operator's answer (AnswerQuestion, core.Client's, which the daemon
// routes here; its hand-back, answerHandback), a question superseded by
// new input (supersedeTx) or made stale (staleQuestionTx), a waiting call
// cut off (dropWaitingCall, markNextTurn, queueLateAnswer), the asking
// turn ended (endTurnForQuestion); and an agent's permission request
// (permission.go: requestPermission, the policy, askPermission, its answer
// and its staling). Its fields are all it may touch: the kernel, the
// engine's wait group, and what other areas give it, each named.
//
// Locks: none of its own. AnswerQuestion holds a task's rt.mu over the
// waiting calls' lock (notifyWaiter), so the turn cannot end between its
// check and the handoff; endTurnForQuestion takes rt.mu alone. A
// permission request holds the task's rt.permSem (one question at a time
// per task; taken on the agent's request, not under rt.mu) over its store
// transactions and its wait. A question's waiter is registered between
// its transaction and its announce (tx then announce).
type Questions struct {
	k *kernel
	// procWG is the engine's wait group of process teardowns and timers
	// (Close waits on it): the timer that ends an asking turn runs under it.
	procWG *sync.WaitGroup

	// What the other areas give it (compose.go):
	// may and mayAnswer are the authorizer's (authorize.go): who asks the
	// parent, and who answers or replies to a question.
	may       func(a core.Actor, act Action, t core.Task) error
	mayAnswer func(a core.Actor, act Action, t core.Task, q questionMeta) error
	// task resolves a task reference (kernel.go).
	task func(ctx context.Context, ref string) (core.Task, error)
	// handoffTx is the handoffs' (handoff.go): an answer hands its task
	// back to the role that asked.
	handoffTx func(ctx context.Context, tx *store.Tx, c *changes, t core.Task, target core.Ref, hander, message string,
		stall *core.Stall, profile string, signOff *core.Task, notice bool) (string, error)
	// roleOf and profile are the roles area's (roles.go, profiles.go): the
	// role an answer hands back to and its profile, and the profile whose
	// permission policy a request follows.
	roleOf  func(ctx context.Context, name string) (store.Role, error)
	profile func(ctx context.Context, name string) (core.Profile, error)
}

// questionMeta is a question's state. It lives in the question message's
// meta, its single source of truth.
type questionMeta struct {
	QuestionID   string              `json:"question_id"`
	Kind         core.QuestionKind   `json:"kind"`
	Status       core.QuestionStatus `json:"status"`
	Questions    []core.QuestionItem `json:"questions"`
	Context      string              `json:"context,omitempty"`
	AskedSession string              `json:"asked_session"`
	AskedAt      time.Time           `json:"asked_at"`
	ParentTaskID string              `json:"parent_task_id,omitempty"`
	// Delivery, for user questions: "waiting_call" while the agent's call
	// waits, "next_turn" once it was cut off.
	Delivery   string      `json:"delivery,omitempty"`
	Answer     *answerMeta `json:"answer,omitempty"`
	Resolution string      `json:"resolution,omitempty"`
	ResolvedAt *time.Time  `json:"resolved_at,omitempty"`
	// Tool, PermissionOptions and Remember belong to a permission
	// question: the tool call, the agent's options (in the order of the
	// question's), and the tool key an "allow always" is remembered by.
	Tool              *core.PermissionTool `json:"tool,omitempty"`
	PermissionOptions []permissionOption   `json:"permission_options,omitempty"`
	Remember          string               `json:"remember,omitempty"`
}

type answerMeta struct {
	Text    string    `json:"text"`
	Answers []string  `json:"answers,omitempty"`
	By      string    `json:"by"`
	At      time.Time `json:"at"`
}

// answerDelivery is what a waiting ask_user_question_kandev call receives.
type answerDelivery struct {
	status  core.QuestionStatus
	answers []string
	text    string
	reason  string
	// option and by: a permission question's chosen option id and who
	// chose it.
	option string
	by     string
}

func parseQuestion(m store.Message) (questionMeta, error) {
	var q questionMeta
	if err := json.Unmarshal([]byte(m.Meta), &q); err != nil {
		return q, fmt.Errorf("question %s: %w", m.Ref, err)
	}
	return q, nil
}

func questionInfo(m store.Message) (core.QuestionInfo, error) {
	q, err := parseQuestion(m)
	if err != nil {
		return core.QuestionInfo{}, err
	}
	return core.QuestionInfo{ID: q.QuestionID, Kind: q.Kind, Status: q.Status, Text: m.Text, AskedAt: q.AskedAt,
		ParentTaskID: q.ParentTaskID, Questions: q.Questions, Tool: q.Tool}, nil
}

// validateQuestions checks the shared question shape beyond the schema.
func validateQuestions(a capability.QuestionArgs) ([]core.QuestionItem, error) {
	if len(a.Questions) < 1 || len(a.Questions) > 4 {
		return nil, core.Errorf(core.CodeValidation, "questions: give 1 to 4 questions, not %d", len(a.Questions))
	}
	items := make([]core.QuestionItem, 0, len(a.Questions))
	for i, q := range a.Questions {
		p := strings.TrimSpace(q.Prompt)
		if p == "" {
			return nil, core.Errorf(core.CodeValidation, "questions[%d].prompt is empty", i)
		}
		if n := len(q.Options); n != 0 && (n < 2 || n > 6) {
			return nil, core.Errorf(core.CodeValidation, "questions[%d].options: give 2 to 6 options or none (free text), not %d", i, n)
		}
		item := core.QuestionItem{Prompt: p}
		for j, o := range q.Options {
			l := strings.TrimSpace(o.Label)
			if l == "" {
				return nil, core.Errorf(core.CodeValidation, "questions[%d].options[%d].label is empty", i, j)
			}
			item.Options = append(item.Options, core.QuestionOption{Label: l, Description: strings.TrimSpace(o.Description)})
		}
		items = append(items, item)
	}
	return items, nil
}

func renderQuestions(items []core.QuestionItem, context string) string {
	var b strings.Builder
	for i, q := range items {
		if len(items) > 1 {
			fmt.Fprintf(&b, "%d. ", i+1)
		}
		b.WriteString(q.Prompt)
		for j, o := range q.Options {
			fmt.Fprintf(&b, "\n   %d) %s", j+1, o.Label)
			if o.Description != "" {
				b.WriteString(" — " + o.Description)
			}
		}
		b.WriteString("\n")
	}
	if context != "" {
		b.WriteString("Context: " + context + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// recordQuestion writes a new pending question entry.
func (qs *Questions) recordQuestion(ctx context.Context, tx *store.Tx, taskID, sessionID string, q questionMeta) (store.Message, error) {
	b, err := json.Marshal(q)
	if err != nil {
		return store.Message{}, err
	}
	now := time.Now().UTC()
	return tx.InsertMessage(ctx, store.Message{TaskID: taskID, SessionID: sessionID, Kind: string(core.MsgQuestion),
		Author: core.TaskRef(taskID).String(), Text: renderQuestions(q.Questions, q.Context), Meta: string(b), Ref: q.QuestionID,
		CreatedAt: now, UpdatedAt: now})
}

// resolveQuestion moves a pending question to a final state exactly once
// (compare-and-set on its status). It reports whether this call did it.
func (qs *Questions) resolveQuestion(ctx context.Context, tx *store.Tx, m store.Message, to core.QuestionStatus, reason string, ans *answerMeta) (bool, error) {
	q, err := parseQuestion(m)
	if err != nil {
		return false, err
	}
	now := time.Now().UTC()
	q.Status, q.Resolution, q.ResolvedAt, q.Answer = to, reason, &now, ans
	b, err := json.Marshal(q)
	if err != nil {
		return false, err
	}
	return tx.CompareAndSetMeta(ctx, m.Seq, "$.status", string(core.QuestionPending), string(b), now)
}

// afterResolve tells a waiting call and withdraws an undelivered question
// prompt from the parent's queue.
func (qs *Questions) afterResolve(ctx context.Context, tx *store.Tx, m store.Message, d answerDelivery) error {
	q, err := parseQuestion(m)
	if err != nil {
		return err
	}
	if q.Kind == core.QuestionParent && q.ParentTaskID != "" && d.status != core.QuestionAnswered {
		items, err := tx.Queue(ctx, q.ParentTaskID)
		if err != nil {
			return err
		}
		for _, it := range items {
			if it.Kind == itemQuestion && strings.Contains(it.Meta, `"question_id":"`+q.QuestionID+`"`) {
				if err := tx.DeleteQueueItem(ctx, it.ID); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// dropWaitingCall stops treating the task's user-question call as waiting:
// the turn that made it ended, or the agent reported the call failed, so
// whatever is handed to that call never reaches the model. The question
// stays pending and its answer becomes the next turn.
func (qs *Questions) dropWaitingCall(ctx context.Context, taskID, why string) {
	m, err := qs.k.db.LastMessageOfKind(ctx, taskID, string(core.MsgQuestion))
	if err != nil {
		return
	}
	q, err := parseQuestion(m)
	if err != nil || q.Kind != core.QuestionUser {
		return
	}
	if qs.k.notifyWaiter(q.QuestionID, answerDelivery{status: core.QuestionPending, reason: why}) {
		qs.markNextTurn(m.Seq)
	}
}

// supersedeTx: explicit new input (the operator's, or the direct parent's)
// supersedes the task's pending question. The returned func tells whoever
// waits on it; run it after the transaction commits.
func (qs *Questions) supersedeTx(ctx context.Context, tx *store.Tx, t core.Task, actor core.Actor, c *changes) error {
	m, err := tx.PendingQuestion(ctx, t.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if agentOf(core.ActorFrom(ctx), t.ID) {
		// The asker's own move (the handoff to a person its preamble asks
		// for) is not new input to it: its question keeps waiting.
		return nil
	}
	reason := "new input from " + actor.String() + " superseded it"
	ok, err := qs.resolveQuestion(ctx, tx, m, core.QuestionSuperseded, reason, nil)
	if err != nil || !ok {
		return err
	}
	q, _ := parseQuestion(m)
	d := answerDelivery{status: core.QuestionSuperseded, reason: reason}
	if err := qs.afterResolve(ctx, tx, m, d); err != nil {
		return err
	}
	c.tellWaiter(q.QuestionID, d)
	c.question(m.Seq)
	if q.ParentTaskID != "" {
		c.touch(q.ParentTaskID)
	}
	return nil
}

// staleQuestionTx: the task (or its session) reached a terminal state or
// was stopped, so its pending question can no longer be answered. It makes
// the question stale within tx, if there is one, and says what is to be
// announced.
func (qs *Questions) staleQuestionTx(ctx context.Context, tx *store.Tx, taskID, why string, c *changes) error {
	m, err := tx.PendingQuestion(ctx, taskID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	ok, err := qs.resolveQuestion(ctx, tx, m, core.QuestionStale, why, nil)
	if err != nil || !ok {
		return err
	}
	d := answerDelivery{status: core.QuestionStale, reason: why}
	if err := qs.afterResolve(ctx, tx, m, d); err != nil {
		return err
	}
	q, _ := parseQuestion(m)
	c.tellWaiter(q.QuestionID, d)
	c.question(m.Seq)
	if q.ParentTaskID != "" {
		c.touch(q.ParentTaskID)
	}
	return nil
}

// replyToQuestion answers a child's parent question: only the recorded
// direct parent may, exactly once.
func (qs *Questions) replyToQuestion(ctx context.Context, child core.Task, qid, text string) (core.MessageResult, error) {
	actor := core.ActorFrom(ctx)
	m, err := qs.k.db.MessageByRef(ctx, qid)
	if err != nil || m.Kind != string(core.MsgQuestion) {
		return core.MessageResult{}, core.Errorf(core.CodeNotFound, "question %s not found", qid)
	}
	if m.TaskID != child.ID {
		return core.MessageResult{}, core.Errorf(core.CodeValidation, "question %s belongs to task %s, not %s", qid, m.TaskID, child.ID)
	}
	q, err := parseQuestion(m)
	if err != nil {
		return core.MessageResult{}, mapStoreErr(err, "question "+qid)
	}
	if err := qs.mayAnswer(actor, ActReply, child, q); err != nil {
		return core.MessageResult{}, err
	}
	switch q.Status {
	case core.QuestionAnswered:
		return core.MessageResult{TaskID: child.ID, Status: "already_answered", QuestionID: qid}, nil
	case core.QuestionSuperseded, core.QuestionStale:
		return core.MessageResult{}, core.Errorf(core.CodeConflict, "question %s is %s (%s); it can no longer be answered", qid, q.Status, q.Resolution).
			WithDetails(map[string]any{"question_id": qid, "status": q.Status, "resolution": q.Resolution})
	}
	now := time.Now().UTC()
	claimed := false
	c, err := qs.k.tx(ctx, func(tx *store.Tx, c *changes) error {
		ok, err := qs.resolveQuestion(ctx, tx, m, core.QuestionAnswered, "", &answerMeta{Text: text, By: actor.String(), At: now})
		if err != nil || !ok {
			return err
		}
		claimed = true
		if _, err = tx.Enqueue(ctx, answerItem(child.ID, actor.String(), prompt.Answer{ParentTaskID: q.ParentTaskID, QuestionID: qid, Text: text},
			map[string]any{"session_id": q.AskedSession}, now)); err != nil {
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
		return nil
	})
	if err != nil {
		return core.MessageResult{}, mapStoreErr(err, "answer to "+qid)
	}
	if !claimed {
		// Lost the race to another resolution; report what won.
		cur, err := qs.k.db.GetMessage(ctx, m.Seq)
		if err == nil {
			if cq, err := parseQuestion(cur); err == nil && cq.Status == core.QuestionAnswered {
				return core.MessageResult{TaskID: child.ID, Status: "already_answered", QuestionID: qid}, nil
			} else if err == nil {
				return core.MessageResult{}, core.Errorf(core.CodeConflict, "question %s is %s; it can no longer be answered", qid, cq.Status)
			}
		}
		return core.MessageResult{}, core.Errorf(core.CodeConflict, "question %s changed while answering; read it again", qid)
	}
	qs.k.announce(c)
	return core.MessageResult{TaskID: child.ID, Status: "answered", QuestionID: qid}, nil
}

// AnswerQuestion serves core.Client's operation of that name: the operator answers a task's
// pending user question.
func (qs *Questions) AnswerQuestion(ctx context.Context, ref string, in core.AnswerInput) (core.AnswerResult, error) {
	actor := core.ActorFrom(ctx)
	if err := qs.may(actor, ActAnswer, core.Task{}); err != nil {
		return core.AnswerResult{}, err
	}
	t, err := qs.task(ctx, ref)
	if err != nil {
		return core.AnswerResult{}, err
	}
	m, err := qs.k.db.PendingQuestion(ctx, t.ID)
	if errors.Is(err, store.ErrNotFound) {
		return qs.noPendingQuestion(ctx, t, in)
	}
	if err != nil {
		return core.AnswerResult{}, mapStoreErr(err, "question of "+t.ID)
	}
	q, err := parseQuestion(m)
	if err != nil {
		return core.AnswerResult{}, mapStoreErr(err, "question of "+t.ID)
	}
	if in.QuestionID != "" && in.QuestionID != q.QuestionID {
		return core.AnswerResult{}, core.Errorf(core.CodeConflict, "task %s's pending question is %s, not %s", t.ID, q.QuestionID, in.QuestionID)
	}
	if err := qs.mayAnswer(actor, ActAnswer, t, q); err != nil {
		return core.AnswerResult{}, err
	}
	if q.Kind == core.QuestionPermission {
		return qs.answerPermission(ctx, t, m, q, in)
	}
	answers, err := answerTexts(q.Questions, in)
	if err != nil {
		return core.AnswerResult{}, err
	}
	text := answerText(answers)
	now := time.Now().UTC()
	a := &userAnswer{t: t, m: m, q: q, actor: actor, answers: answers, text: text, now: now}
	// An answer is a handoff back (rule 4): to the role that asked, when
	// the task is with a person because that role handed it there after
	// asking. The answer is then that turn's prompt: the hand-back queues
	// no notice of its own.
	a.back, a.backProfile, a.handBack = qs.answerHandback(ctx, t, m, q)
	// The answer is queued in the same transaction that claims the question,
	// so there is never a moment with the question answered and nothing to
	// deliver. When the agent's call still waits, it takes the answer and
	// the queued copy is withdrawn.
	// A first transaction that announces nothing: the waiting call may be
	// handed the answer only once its claim committed, and under the task
	// lock; the second transaction below depends on whether it took it, and
	// announces the whole answer.
	handed, err := qs.claimAnswer(ctx, a)
	if err != nil {
		return core.AnswerResult{}, mapStoreErr(err, "answer to "+q.QuestionID)
	}
	if !a.claimed {
		return core.AnswerResult{TaskID: t.ID, QuestionID: q.QuestionID, Status: "already_answered"}, nil
	}
	delivered := "next_turn"
	// A waiting call takes the answer only while the turn that made it
	// runs: an agent whose MCP client gave up on the call (Codex, without
	// cancelling it) ended that turn, and the answer must be its next turn.
	// Under the task lock, so the turn cannot end between check and handoff.
	rt := qs.k.live.runtime(t.ID)
	rt.mu.Lock()
	took := rt.turn != nil && qs.k.notifyWaiter(q.QuestionID, answerDelivery{status: core.QuestionAnswered, answers: answers, text: text})
	rt.mu.Unlock()
	if took {
		delivered = "waiting_call"
	}
	// The second step of an answer: the copy a waiting call took is
	// withdrawn, and the answer noted, together.
	qs.noteAnswer(ctx, a, took, delivered)
	if a.handBack {
		// After the answer's note: the hand-back wakes the task, whose
		// next turn is the answer.
		qs.k.announce(handed)
	}
	return core.AnswerResult{TaskID: t.ID, QuestionID: q.QuestionID, Status: "answered", Delivered: delivered}, nil
}

// userAnswer is the operator's answer to a user question as
// AnswerQuestion's steps share it: question m (q) of task t, who answered
// and what, and what the first transaction did.
type userAnswer struct {
	t       core.Task
	m       store.Message
	q       questionMeta
	actor   core.Actor
	answers []string
	text    string
	now     time.Time
	// back, backProfile and handBack: the hand-back (answerHandback), and
	// whether it still holds once the claim read the task again.
	back        core.Ref
	backProfile string
	handBack    bool
	// claimed and item: the claim committed, and the answer it queued.
	claimed bool
	item    store.QueueItem
}

// noPendingQuestion is AnswerQuestion's answer for a task with no pending
// question: its last question, when it is the one answered, was answered
// already or can no longer be; else there is none.
func (qs *Questions) noPendingQuestion(ctx context.Context, t core.Task, in core.AnswerInput) (core.AnswerResult, error) {
	if last, lerr := qs.k.db.LastMessageOfKind(ctx, t.ID, string(core.MsgQuestion)); lerr == nil {
		if q, perr := parseQuestion(last); perr == nil && (in.QuestionID == "" || in.QuestionID == q.QuestionID) {
			if q.Status == core.QuestionAnswered {
				return core.AnswerResult{TaskID: t.ID, QuestionID: q.QuestionID, Status: "already_answered"}, nil
			}
			return core.AnswerResult{}, core.Errorf(core.CodeConflict, "question %s is %s (%s); it can no longer be answered", q.QuestionID, q.Status, q.Resolution)
		}
	}
	return core.AnswerResult{}, core.Errorf(core.CodeNotFound, "task %s has no pending question", t.ID)
}

// answerText is the answers as one text: one a line, numbered when there
// are several.
func answerText(answers []string) string {
	text := strings.Join(answers, "\n")
	if len(answers) > 1 {
		var b strings.Builder
		for i, a := range answers {
			fmt.Fprintf(&b, "%d. %s\n", i+1, a)
		}
		text = strings.TrimRight(b.String(), "\n")
	}
	return text
}

// claimAnswer is an answer's first transaction: the question claimed, the
// answer queued and, when it still applies, the task handed back. It
// announces nothing; its changes are the hand-back's announce.
func (qs *Questions) claimAnswer(ctx context.Context, a *userAnswer) (changes, error) {
	t, m, q, actor, answers, text, now := a.t, a.m, a.q, a.actor, a.answers, a.text, a.now
	return qs.k.tx(ctx, func(tx *store.Tx, c *changes) error {
		a.claimed = false
		ok, err := qs.resolveQuestion(ctx, tx, m, core.QuestionAnswered, "", &answerMeta{Text: text, Answers: answers, By: actor.String(), At: now})
		if err != nil || !ok {
			return err
		}
		a.claimed = true
		a.item, err = tx.Enqueue(ctx, answerItem(t.ID, actor.String(), prompt.Answer{QuestionID: q.QuestionID, Text: text}, nil, now))
		if err != nil || !a.handBack {
			return err
		}
		// The task may have moved since it was read: only the same holder
		// hands it back.
		cur, err := tx.GetTask(ctx, t.ID)
		if err != nil {
			return err
		}
		if t.Assignee == nil || cur.Assignee != t.Assignee.String() {
			a.handBack = false
			return nil
		}
		_, err = qs.handoffTx(ctx, tx, c, t, a.back, actor.String(), "answered question "+q.QuestionID, nil, a.backProfile, nil, false)
		return err
	})
}

// noteAnswer is an answer's second transaction: the copy a waiting call
// took (took) withdrawn, and the answer noted with how it was delivered.
func (qs *Questions) noteAnswer(ctx context.Context, a *userAnswer, took bool, delivered string) {
	t, m, q, actor, text, now := a.t, a.m, a.q, a.actor, a.text, a.now
	err := qs.k.commit(ctx, func(tx *store.Tx, c *changes) error {
		c.question(m.Seq)
		c.wake(t.ID)
		if took {
			if err := tx.DeleteQueueItem(ctx, a.item.ID); err != nil {
				return err
			}
		}
		note, err := tx.InsertMessage(ctx, store.Message{TaskID: t.ID, Kind: string(core.MsgAnswer), Author: actor.String(), Text: text,
			Meta: metaJSON(map[string]any{"question_id": q.QuestionID, "delivered": delivered}), CreatedAt: now, UpdatedAt: now})
		if err != nil {
			return err
		}
		c.addMessage(note)
		return nil
	})
	if err != nil {
		qs.k.log.Error("note the answer", "task", t.ID, "err", err)
	}
}

// answerHandback reports whether an answer to question m (q) of task t
// hands the task back, and to which role (and its profile): the task is
// with a person, and the last handoff on it, made after the question was
// asked, took it from the role that asked to that person. A task a person
// took, or one handed on since, stays where it is.
func (qs *Questions) answerHandback(ctx context.Context, t core.Task, m store.Message, q questionMeta) (core.Ref, string, bool) {
	if t.Assignee == nil || !t.Assignee.IsPerson() || q.AskedSession == "" {
		return core.Ref{}, "", false
	}
	s, err := qs.k.db.GetSession(ctx, q.AskedSession)
	if err != nil || s.Role == "" {
		return core.Ref{}, "", false
	}
	h, err := qs.k.db.LastMessageOfKind(ctx, t.ID, string(core.MsgHandoff))
	if err != nil || h.Seq < m.Seq {
		return core.Ref{}, "", false
	}
	var meta struct {
		From core.Ref `json:"from"`
		To   core.Ref `json:"to"`
	}
	role := core.RoleRef(s.Role)
	if json.Unmarshal([]byte(h.Meta), &meta) != nil || meta.From != role || meta.To != *t.Assignee {
		return core.Ref{}, "", false
	}
	r, err := qs.roleOf(ctx, role.Name)
	if err != nil {
		return core.Ref{}, "", false
	}
	prof, err := qs.profile(ctx, r.Profile)
	if err != nil {
		return core.Ref{}, "", false
	}
	return role, prof.Name, true
}

// answerTexts turns the operator's input into one answer per question:
// an option number picks that option's label, anything else is free text.
func answerTexts(items []core.QuestionItem, in core.AnswerInput) ([]string, error) {
	raw := in.Answers
	if len(raw) == 0 {
		switch {
		case in.Option > 0 && in.Text != "":
			return nil, core.Errorf(core.CodeValidation, "give either an option number or free text, not both")
		case in.Option > 0:
			raw = []string{strconv.Itoa(in.Option)}
		case strings.TrimSpace(in.Text) != "":
			raw = []string{in.Text}
		default:
			return nil, core.Errorf(core.CodeValidation, "an answer is required: --option N or TEXT")
		}
	}
	if len(raw) != len(items) {
		return nil, core.Errorf(core.CodeValidation, "the question has %d parts; give %d answers, one per part", len(items), len(items))
	}
	out := make([]string, len(items))
	for i, a := range raw {
		a = strings.TrimSpace(a)
		if a == "" {
			return nil, core.Errorf(core.CodeValidation, "answer %d is empty", i+1)
		}
		if n, err := strconv.Atoi(a); err == nil && len(items[i].Options) > 0 {
			if n < 1 || n > len(items[i].Options) {
				return nil, core.Errorf(core.CodeValidation, "option %d does not exist: question %d has options 1-%d", n, i+1, len(items[i].Options))
			}
			out[i] = items[i].Options[n-1].Label
			continue
		}
		out[i] = a
	}
	return out, nil
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
	qs.endTurnForQuestion(actor.SessionID)
	return map[string]any{"question_id": q.QuestionID, "status": "waiting_for_parent", "parent_task_id": parentID,
		"message": "Question recorded and sent to your parent task. End your turn now: the answer arrives as your next message."}, nil
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

// Engine keeps core.Client's answer for now (issue 35): it forwards to the
// questions area, which holds the body.
