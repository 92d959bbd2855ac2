package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/store"
)

// Questions is the engine's questions and permissions area (rule 2, ADR
// 0024): a task's user question (askUser) and an autopilot child's
// question for its parent (askParent, answered by replyToQuestion), the
// operator's answer (AnswerQuestion, api.Client's, which the daemon
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

// afterResolve withdraws an undelivered question prompt from the parent's
// queue: whatever resolved the question (an answer from the person holding
// the parent, new input, a stop), the parent's agent must not be asked it.
func (qs *Questions) afterResolve(ctx context.Context, tx *store.Tx, m store.Message, d answerDelivery) error {
	q, err := parseQuestion(m)
	if err != nil {
		return err
	}
	if q.Kind == core.QuestionParent && q.ParentTaskID != "" {
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
