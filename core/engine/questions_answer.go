package engine

// The operator's answer to a task's question (AnswerQuestion): which
// answer it takes, who it is recorded as, and the hand-back it causes.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/prompt"
	"github.com/kandev/kandev/store"
)

// AnswerQuestion serves api.Client's operation of that name: the operator answers a task's
// pending user question.
func (qs *Questions) AnswerQuestion(ctx context.Context, ref string, in api.AnswerInput) (api.AnswerResult, error) {
	actor := core.ActorFrom(ctx)
	if err := qs.may(actor, ActAnswer, core.Task{}); err != nil {
		return api.AnswerResult{}, err
	}
	t, err := qs.task(ctx, ref)
	if err != nil {
		return api.AnswerResult{}, err
	}
	m, err := qs.k.db.PendingQuestion(ctx, t.ID)
	if errors.Is(err, store.ErrNotFound) {
		if cq, ok := qs.childQuestion(t, in.QuestionID); ok {
			return qs.answerOfChild(ctx, cq, in)
		}
		return qs.noPendingQuestion(ctx, t, in)
	}
	if err != nil {
		return api.AnswerResult{}, mapStoreErr(err, "question of "+t.ID)
	}
	q, err := parseQuestion(m)
	if err != nil {
		return api.AnswerResult{}, mapStoreErr(err, "question of "+t.ID)
	}
	if in.QuestionID != "" && in.QuestionID != q.QuestionID {
		if cq, ok := qs.childQuestion(t, in.QuestionID); ok {
			return qs.answerOfChild(ctx, cq, in)
		}
		return api.AnswerResult{}, core.Errorf(core.CodeConflict, "task %s's pending question is %s, not %s", t.ID, q.QuestionID, in.QuestionID)
	}
	if err := qs.mayAnswer(actor, ActAnswer, t, q); err != nil {
		return api.AnswerResult{}, err
	}
	if q.Kind == core.QuestionPermission {
		return qs.answerPermission(ctx, t, m, q, in)
	}
	if q.Kind == core.QuestionParent {
		// The person holding the parent answers in its place (mayAnswer):
		// an answer as the parent's would be, to the child.
		answers, err := answerTexts(q.Questions, in)
		if err != nil {
			return api.AnswerResult{}, err
		}
		status, err := qs.answerChildQuestion(ctx, t, m, q, answerText(answers))
		if err != nil {
			return api.AnswerResult{}, err
		}
		return api.AnswerResult{TaskID: t.ID, QuestionID: q.QuestionID, Status: status, Delivered: "next_turn"}, nil
	}
	answers, err := answerTexts(q.Questions, in)
	if err != nil {
		return api.AnswerResult{}, err
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
		return api.AnswerResult{}, mapStoreErr(err, "answer to "+q.QuestionID)
	}
	if !a.claimed {
		return api.AnswerResult{TaskID: t.ID, QuestionID: q.QuestionID, Status: "already_answered"}, nil
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
	return api.AnswerResult{TaskID: t.ID, QuestionID: q.QuestionID, Status: "answered", Delivered: delivered}, nil
}

// childQuestion is the question one of parent's subtasks asked it that an
// answer given on parent takes (ADR 0069): while a person holds parent,
// the one named qid, or with none named the first of ChildQuestionsOf's
// order, the one parent's escalation names.
func (qs *Questions) childQuestion(parent core.Task, qid string) (core.ChildQuestion, bool) {
	if !parent.WithPerson() {
		return core.ChildQuestion{}, false
	}
	for _, cq := range qs.k.childQuestions(&parent) {
		if qid == "" || cq.Question.ID == qid {
			return cq, true
		}
	}
	return core.ChildQuestion{}, false
}

// answerOfChild answers, given on its parent, a subtask's question: as
// AnswerQuestion on the subtask, for that question alone.
func (qs *Questions) answerOfChild(ctx context.Context, cq core.ChildQuestion, in api.AnswerInput) (api.AnswerResult, error) {
	in.QuestionID = cq.Question.ID
	return qs.AnswerQuestion(ctx, cq.TaskID, in)
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
func (qs *Questions) noPendingQuestion(ctx context.Context, t core.Task, in api.AnswerInput) (api.AnswerResult, error) {
	if last, lerr := qs.k.db.LastMessageOfKind(ctx, t.ID, string(core.MsgQuestion)); lerr == nil {
		if q, perr := parseQuestion(last); perr == nil && (in.QuestionID == "" || in.QuestionID == q.QuestionID) {
			if q.Status == core.QuestionAnswered {
				return api.AnswerResult{TaskID: t.ID, QuestionID: q.QuestionID, Status: "already_answered"}, nil
			}
			return api.AnswerResult{}, core.Errorf(core.CodeConflict, "question %s is %s (%s); it can no longer be answered", q.QuestionID, q.Status, q.Resolution)
		}
	}
	return api.AnswerResult{}, core.Errorf(core.CodeNotFound, "task %s has no pending question", t.ID)
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
func answerTexts(items []core.QuestionItem, in api.AnswerInput) ([]string, error) {
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
