package engine

import (
	"context"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/capability"
)

// Who may act on which task. Every tool and command asks the authorizer,
// may (with mayAnswer and mayCall for the decisions that turn on a question
// or a tool as well), before it acts, and every refusal and its text is
// written here: a change to one rule is a change to this file (table tests
// in authorize_test.go; the integration tests of each command still prove
// the refusals end to end). See docs/decisions/0055-one-authorizer.md.

// An Action is what an actor asks to do. Its String is the verb the
// refusals name ("only task p, the direct parent of task c, may stop it").
type Action int

const (
	actNone Action = iota

	// On a task, within the subtree: the operator everywhere, an agent on
	// its own task and its descendants.
	ActEdit          // edit a task's title and description
	ActSetStatus     // set a task's status
	ActMarkDone      // set a task's status to done: never its own agent
	ActBlock         // mark a task blocked on others
	ActArchive       // archive a task
	ActReview        // read the review comments kept on a task
	ActDiff          // read a task's worktree diff
	ActMerge         // merge a task's branch
	ActDiscard       // discard a task's worktree
	ActRequestReview // read the review of the caller's own pull request
	ActPush          // push a task's branch: a person, or the task's own agent
	ActHandoff       // hand a task on; never the external surface
	ActCreateChild   // create a task under this one (an agent: in its subtree)

	// Steering a task.
	ActStart     // start a task: an agent only below itself
	ActMessage   // message a task; never the external surface
	ActInterrupt // deliver a message as an interrupt: core.MayInterrupt
	ActStop      // stop a task: a person, or its direct parent

	// Questions.
	ActAnswer    // answer a task's user or permission question: a person
	ActReply     // answer a child's parent question: the parent asked (mayAnswer)
	ActAskParent // ask the parent: an autopilot child, of its own task

	// The operator's housekeeping.
	ActDropQueued // drop messages queued on a task
	ActPrune      // prune worktrees no task owns
	ActSetBudget  // set a task's budget
	ActAddProfile // add or replace a profile; not a sandboxed agent
	ActRemoveProfile
	ActAddRole
	ActEditRole
	ActRemoveRole
	ActAddPerson
	ActAddHost
	ActRemoveHost

	// Tools.
	ActUseTools // call MCP tools at all: agents and the external surface

	actCount
)

var actionVerbs = [actCount]string{
	ActEdit: "edit", ActSetStatus: "set the status of", ActMarkDone: "mark done", ActBlock: "block",
	ActArchive: "archive", ActReview: "read the review of", ActDiff: "diff", ActMerge: "merge",
	ActDiscard: "discard", ActRequestReview: "review", ActPush: "push", ActHandoff: "hand on",
	ActCreateChild: "create subtasks under", ActStart: "start", ActMessage: "message",
	ActInterrupt: "interrupt", ActStop: "stop", ActAnswer: "answer", ActReply: "reply to",
	ActAskParent: "ask the parent of", ActDropQueued: "drop queued messages", ActPrune: "prune worktrees",
	ActSetBudget: "set a budget", ActAddProfile: "edit profiles", ActRemoveProfile: "edit profiles",
	ActAddRole: "add roles", ActEditRole: "edit roles", ActRemoveRole: "remove roles",
	ActAddPerson: "add people", ActAddHost: "add hosts", ActRemoveHost: "remove hosts",
	ActUseTools: "use MCP tools",
}

func (act Action) String() string {
	if act > actNone && act < actCount {
		return actionVerbs[act]
	}
	return "do that"
}

// may is the authorizer: nil when a may do act to t, else the refusal
// (core.CodeForbidden) with the text the caller shows. t is the task acted
// on (for ActCreateChild the parent; for the actions on no task, the zero
// Task). An action without a rule here is refused.
func (az *authorizer) may(a core.Actor, act Action, t core.Task) error {
	switch act {
	case ActEdit, ActSetStatus, ActBlock, ActArchive, ActReview, ActDiff, ActMerge, ActDiscard, ActRequestReview, ActMarkDone, ActPush, ActHandoff, ActCreateChild:
		return az.mayOnTask(a, act, t)
	case ActStart, ActMessage, ActInterrupt, ActStop:
		return az.maySteer(a, act, t)
	case ActAnswer, ActAskParent:
		return mayAsk(a, act, t)
	case ActDropQueued, ActPrune, ActSetBudget, ActAddProfile, ActRemoveProfile, ActAddRole, ActEditRole, ActRemoveRole, ActAddPerson, ActAddHost, ActRemoveHost, ActUseTools:
		return az.mayKeepHouse(a, act, t)
	}
	// ActReply needs its question (mayAnswer); anything else is a bug.
	return noRule(act, t)
}

// noRule refuses an action no rule covers: a bug, never a policy.
func noRule(act Action, t core.Task) error {
	return core.Errorf(core.CodeForbidden, "no rule lets anyone %s task %s", act, t.ID)
}

// mayOnTask is may for what is done to a task itself: within reach, and
// for marking done, pushing, handing on and creating under it, more.
func (az *authorizer) mayOnTask(a core.Actor, act Action, t core.Task) error {
	switch act {
	case ActEdit, ActSetStatus, ActBlock, ActArchive, ActReview, ActDiff, ActMerge, ActDiscard, ActRequestReview:
		return az.inReach(a, t)
	case ActMarkDone:
		if err := az.inReach(a, t); err != nil {
			return err
		}
		if agentOf(a, t.ID) {
			return core.Errorf(core.CodeForbidden,
				"no role marks its own task done: hand task %s on for sign-off (handoff_task_kandev to \"back\")", t.ID)
		}
	case ActPush:
		// A person pushes any task's branch; an agent only its own task's,
		// from the provider group's tools (it reaches past this machine).
		if err := az.inReach(a, t); err != nil {
			return err
		}
		if !personActs(a) && !agentOf(a, t.ID) {
			return core.Errorf(core.CodeForbidden, "only a person, or the task's own agent, pushes a task's branch")
		}
	case ActHandoff:
		switch a.Kind {
		case core.ActorPerson:
		case core.ActorAgent:
			if !az.inSubtree(a, t.ID) {
				return core.Errorf(core.CodeForbidden, "task %s is neither your task nor in your subtree", t.ID)
			}
		default:
			return core.Errorf(core.CodeForbidden, "the external surface cannot hand tasks on")
		}
	case ActCreateChild:
		if a.Kind == core.ActorAgent && !az.inSubtree(a, t.ID) {
			return core.Errorf(core.CodeForbidden, "task %s is outside your subtree; create subtasks under your own task or its descendants", t.ID)
		}
	default:
		return noRule(act, t)
	}
	return nil
}

// maySteer is may for steering a task: start, message, interrupt, stop.
func (az *authorizer) maySteer(a core.Actor, act Action, t core.Task) error {
	switch act {
	case ActStart:
		if a.Kind == core.ActorAgent && !az.above(a, t.ID) {
			return core.Errorf(core.CodeForbidden, "task %s is not in your subtree; only the operator or an ancestor task starts it", t.ID)
		}
	case ActMessage:
		if external(a) {
			return core.Errorf(core.CodeForbidden, "the external surface cannot message tasks")
		}
	case ActInterrupt:
		if !steers(a, t) {
			return notDirectParent(t, act)
		}
	case ActStop:
		switch a.Kind {
		case core.ActorPerson:
		case core.ActorAgent:
			if !directParent(a, t) {
				return notDirectParent(t, act)
			}
		default:
			return core.Errorf(core.CodeForbidden, "the external surface cannot stop tasks")
		}
	default:
		return noRule(act, t)
	}
	return nil
}

// mayAsk is may for the questions: a person answers, an autopilot child
// asks its parent.
func mayAsk(a core.Actor, act Action, t core.Task) error {
	switch act {
	case ActAnswer:
		if !personActs(a) {
			return core.Errorf(core.CodeForbidden, "only a person answers user questions")
		}
	case ActAskParent:
		// Only an autopilot child has a parent to ask; a normal task is told
		// to ask the operator, an autopilot root to decide itself.
		if !t.Autopilot {
			return core.Errorf(core.CodeForbidden, "task %s is not on autopilot; ask the operator with %s", t.ID, capability.AskUser)
		}
		if t.ParentID == "" {
			return core.Errorf(core.CodeForbidden, "no parent to ask: task %s is an autopilot root; decide with your best judgment and state your assumptions", t.ID)
		}
	default:
		return noRule(act, t)
	}
	return nil
}

// mayKeepHouse is may for the operator's housekeeping (queues, worktrees,
// budgets, profiles, roles, people, hosts) and the tools.
func (az *authorizer) mayKeepHouse(a core.Actor, act Action, t core.Task) error {
	switch act {
	case ActDropQueued:
		// It is how the operator clears what others queued on a task; an
		// agent must not withdraw input meant for another task.
		if !personActs(a) {
			return core.Errorf(core.CodeForbidden, "only the operator drops queued messages")
		}
	case ActPrune:
		if a.Kind == core.ActorAgent {
			return core.Errorf(core.CodeForbidden, "only the operator prunes worktrees")
		}
	case ActSetBudget:
		if !personActs(a) {
			return core.Errorf(core.CodeForbidden, "only a person sets a budget")
		}
	case ActAddProfile:
		if external(a) {
			return core.Errorf(core.CodeForbidden, "the external surface cannot edit profiles")
		}
		// A confined agent must not widen its own or its children's reach
		// (a profile's paths, its sandbox).
		if a.Kind == core.ActorAgent {
			if own, ok := az.k.cached(a.TaskID); ok && core.SandboxRank(own.Sandbox) > 0 {
				return core.Errorf(core.CodeForbidden, "task %s runs in sandbox %s: its agent cannot %s", own.ID, own.Sandbox, act)
			}
		}
	case ActRemoveProfile:
		if external(a) {
			return core.Errorf(core.CodeForbidden, "the external surface cannot edit profiles")
		}
	case ActAddRole, ActEditRole, ActRemoveRole, ActAddPerson, ActAddHost, ActRemoveHost:
		if !personActs(a) {
			return core.Errorf(core.CodeForbidden, "only a person may %s", act)
		}
	case ActUseTools:
		if a.Kind != core.ActorAgent && !external(a) {
			return core.Errorf(core.CodeForbidden, "people use the CLI or the TUI, not MCP tools")
		}
	default:
		return noRule(act, t)
	}
	return nil
}

// mayAnswer is may for answering question q of task t: ActAnswer (the
// operator's kandev task answer) or ActReply (the parent's
// reply_to_question_id). Each kind of question has one answerer.
func (az *authorizer) mayAnswer(a core.Actor, act Action, t core.Task, q questionMeta) error {
	switch act {
	case ActAnswer:
		if err := az.may(a, act, t); err != nil {
			return err
		}
		// A parent question is the recorded parent's to answer, or, while
		// a person holds the parent, that person's (ADR 0069).
		if q.Kind == core.QuestionParent && !az.holdsParent(a, q) {
			return core.Errorf(core.CodeForbidden,
				"question %s is for task %s, the parent of task %s; only it, or a person holding it, may answer. To give task %s new input instead, send a message (kandev task message %s TEXT), which supersedes the question",
				q.QuestionID, q.ParentTaskID, t.ID, t.ID, t.ID)
		}
	case ActReply:
		if q.Kind != core.QuestionParent {
			return core.Errorf(core.CodeForbidden, "question %s is for the operator (kandev task answer %s); agents cannot answer it", q.QuestionID, t.ID)
		}
		// The parent that was asked, as recorded: only it knows what it
		// was asked; or the person it is with, who holds its work.
		if !agentOf(a, q.ParentTaskID) && !az.holdsParent(a, q) {
			return core.Errorf(core.CodeForbidden,
				"only task %s, the direct parent that was asked, or a person holding it, may answer question %s; to give task %s new input instead, send a message without reply_to_question_id",
				q.ParentTaskID, q.QuestionID, t.ID)
		}
	default:
		return az.may(a, act, t)
	}
	return nil
}

// mayCall is the refusal of tool name when it is not in the caller's set
// (an autopilot root asking its parent is told why it has none).
func (az *authorizer) mayCall(a core.Actor, set capability.Set, name string) error {
	if set.Has(name) {
		return nil
	}
	if name == capability.AskParent && a.Kind == core.ActorAgent {
		if t, ok := az.k.cached(a.TaskID); ok && t.Autopilot {
			if err := az.may(a, ActAskParent, t); err != nil {
				return err
			}
		}
	}
	return core.Errorf(core.CodeForbidden, "tool %s is not available to this session (surface %s)", name, set.Surface)
}

// inReach: the operator (and the external surface) reach every task, an
// agent its own task and its descendants.
func (az *authorizer) inReach(a core.Actor, t core.Task) error {
	if a.Kind != core.ActorAgent || az.inSubtree(a, t.ID) {
		return nil
	}
	return core.Errorf(core.CodeForbidden, "task %s is not yours or a descendant of yours", t.ID)
}

// notDirectParent is the refusal for interrupt and stop by anyone but the
// task's direct parent (or a person).
func notDirectParent(t core.Task, act Action) error {
	if t.ParentID == "" {
		return core.Errorf(core.CodeForbidden, "only the operator may %s task %s: it is a root task and has no parent", act, t.ID)
	}
	return core.Errorf(core.CodeForbidden, "only task %s, the direct parent of task %s, may %s it", t.ParentID, t.ID, act)
}

// personActs: a person acts (every CLI and TUI call is the operator's).
func personActs(a core.Actor) bool { return a.Kind == core.ActorPerson }

// external: the external MCP surface acts, which reads and creates but
// never steers a task.
func external(a core.Actor) bool { return a.Kind == core.ActorExternal }

// agentOf: a is the agent working the task taskID.
func agentOf(a core.Actor, taskID string) bool {
	return a.Kind == core.ActorAgent && a.TaskID == taskID
}

// directParent: a is the agent working t's direct parent.
func directParent(a core.Actor, t core.Task) bool {
	return a.Kind == core.ActorAgent && core.IsDirectParent(a.TaskID, t)
}

// steers: a's input to t is explicit: a person's, or its direct parent's.
// Only they interrupt t (core.MayInterrupt), and others' queued messages
// never crowd them out.
func steers(a core.Actor, t core.Task) bool { return core.MayInterrupt(a, t) }

// above: a is the agent working a proper ancestor of the task taskID.
func (az *authorizer) above(a core.Actor, taskID string) bool {
	return a.Kind == core.ActorAgent && az.k.isAncestor(a.TaskID, taskID)
}

// inSubtree: a is the agent working the task taskID or one of its
// ancestors.
func (az *authorizer) inSubtree(a core.Actor, taskID string) bool {
	return agentOf(a, taskID) || az.above(a, taskID)
}

// holdsParent: a is a person, and the parent a parent question q was
// asked of is with them (ADR 0069).
func (az *authorizer) holdsParent(a core.Actor, q questionMeta) bool {
	if !personActs(a) || q.ParentTaskID == "" {
		return false
	}
	p, ok := az.k.cached(q.ParentTaskID)
	return ok && p.WithPerson() && az.holder(a, p)
}

// holder: t is with a: a person it was handed to, or an agent whose
// session serves the role t is assigned to.
func (az *authorizer) holder(a core.Actor, t core.Task) bool {
	hander := az.k.handerOf(a)
	return hander != "" && t.Assignee != nil && t.Assignee.String() == hander
}

// authorizer decides who may act on which task (may, mayAnswer, mayCall)
// from the task cache alone; see the comment at the top of this file.
type authorizer struct {
	k *kernel
}

// authorized resolves ref to its task and asks may whether a may act on
// it: the prologue of every operation on one task.
func (az *authorizer) authorized(ctx context.Context, a core.Actor, ref string, act Action) (core.Task, error) {
	t, err := az.k.task(ctx, ref)
	if err != nil {
		return core.Task{}, err
	}
	if err := az.may(a, act, t); err != nil {
		return core.Task{}, err
	}
	return t, nil
}
