package engine

import (
	"fmt"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/capability"
)

// The tree of these tests: g → p → c, c's siblings s and x (x sandboxed),
// and apart u and the autopilot tree a → ac.
var (
	authG  = core.Task{ID: "g"}
	authP  = core.Task{ID: "p", ParentID: "g"}
	authC  = core.Task{ID: "c", ParentID: "p"}
	authS  = core.Task{ID: "s", ParentID: "p"}
	authX  = core.Task{ID: "x", ParentID: "p", Sandbox: core.SandboxBwrap}
	authU  = core.Task{ID: "u"}
	authA  = core.Task{ID: "a", Autopilot: true}
	authAC = core.Task{ID: "ac", ParentID: "a", Autopilot: true}
)

func agentActor(taskID string) core.Actor {
	return core.Actor{Kind: core.ActorAgent, TaskID: taskID, SessionID: "s-" + taskID}
}

var (
	operator = core.OperatorActor()
	alice    = core.Actor{Kind: core.ActorPerson, Name: "alice"}
	ext      = core.Actor{Kind: core.ActorExternal}
)

// authEngine is an engine with only the task cache and live runs the
// predicates read: each task's agent runs as role "eng", except u's
// ("ops").
func authEngine() *Engine {
	e := &Engine{k: &kernel{cache: newTaskCache(), live: newLiveRuns()}}
	e.compose()
	for _, t := range []core.Task{authG, authP, authC, authS, authX, authU, authA, authAC} {
		t := t
		e.k.cache.tasks[t.ID] = &t
		role := "eng"
		if t.ID == "u" {
			role = "ops"
		}
		e.k.live.sessions["s-"+t.ID] = &liveRun{sessionID: "s-" + t.ID, role: role}
	}
	return e
}

func TestActorPredicates(t *testing.T) {
	for _, c := range []struct {
		name string
		a    core.Actor
		t    core.Task
		// want: personActs, external, agentOf(t.ID), directParent, steers
		person, ext, agentOf, parent, steers bool
	}{
		{"the operator", operator, authC, true, false, false, false, true},
		{"another person", alice, authC, true, false, false, false, true},
		{"the external surface", ext, authC, false, true, false, false, false},
		{"the task's own agent", agentActor("c"), authC, false, false, true, false, false},
		{"its direct parent", agentActor("p"), authC, false, false, false, true, true},
		{"its grandparent", agentActor("g"), authC, false, false, false, false, false},
		{"an unrelated task", agentActor("u"), authC, false, false, false, false, false},
		{"any agent, of a root", agentActor("u"), authG, false, false, false, false, false},
	} {
		if got := personActs(c.a); got != c.person {
			t.Errorf("%s: personActs = %v, want %v", c.name, got, c.person)
		}
		if got := external(c.a); got != c.ext {
			t.Errorf("%s: external = %v, want %v", c.name, got, c.ext)
		}
		if got := agentOf(c.a, c.t.ID); got != c.agentOf {
			t.Errorf("%s: agentOf(%s) = %v, want %v", c.name, c.t.ID, got, c.agentOf)
		}
		if got := directParent(c.a, c.t); got != c.parent {
			t.Errorf("%s: directParent(%s) = %v, want %v", c.name, c.t.ID, got, c.parent)
		}
		if got := steers(c.a, c.t); got != c.steers {
			t.Errorf("%s: steers(%s) = %v, want %v", c.name, c.t.ID, got, c.steers)
		}
	}
}

func TestTreePredicates(t *testing.T) {
	e := authEngine()
	for _, c := range []struct {
		name             string
		a                core.Actor
		task             string
		above, inSubtree bool
	}{
		{"own task", agentActor("c"), "c", false, true},
		{"parent", agentActor("p"), "c", true, true},
		{"grandparent", agentActor("g"), "c", true, true},
		{"its own parent", agentActor("c"), "p", false, false},
		{"unrelated", agentActor("u"), "c", false, false},
		{"unknown task", agentActor("g"), "nope", false, false},
		{"a person is no agent", operator, "c", false, false},
		{"the external surface", ext, "c", false, false},
	} {
		if got := e.auth.above(c.a, c.task); got != c.above {
			t.Errorf("%s: above(%s) = %v, want %v", c.name, c.task, got, c.above)
		}
		if got := e.auth.inSubtree(c.a, c.task); got != c.inSubtree {
			t.Errorf("%s: inSubtree(%s) = %v, want %v", c.name, c.task, got, c.inSubtree)
		}
	}
}

func TestHolder(t *testing.T) {
	e := authEngine()
	with := func(r core.Ref) core.Task { t := authC; t.Assignee = &r; return t }
	for _, c := range []struct {
		name string
		a    core.Actor
		t    core.Task
		want bool
	}{
		{"its role's agent", agentActor("c"), with(core.RoleRef("eng")), true},
		{"another role's agent", agentActor("u"), with(core.RoleRef("eng")), false},
		{"an agent, of a task with a person", agentActor("c"), with(core.OperatorRef()), false},
		{"the person it was handed to", operator, with(core.OperatorRef()), true},
		{"another person", alice, with(core.OperatorRef()), false},
		{"a person, of a task with a role", operator, with(core.RoleRef("eng")), false},
		{"nobody holds it", operator, authC, false},
		{"the external surface", ext, with(core.RoleRef("eng")), false},
	} {
		if got := e.auth.holder(c.a, c.t); got != c.want {
			t.Errorf("%s: holder = %v, want %v", c.name, got, c.want)
		}
	}
}

// The relations of the authorizer's table, each an actor seen from task c
// (g → p → c, s c's sibling).
const (
	relSelf     = iota // c's own agent
	relParent          // p's agent, c's direct parent
	relAncestor        // g's agent, above c but not its parent
	relSibling         // s's agent, beside c
	relOperator        // a person
	relExternal        // the external MCP surface (no token)
	relCount
)

var (
	relNames  = [relCount]string{"self", "direct parent", "ancestor", "sibling", "operator", "external"}
	relActors = [relCount]core.Actor{agentActor("c"), agentActor("p"), agentActor("g"), agentActor("s"), operator, ext}
)

// allowed is a relation may lets through; every other entry of a row is the
// exact refusal.
const allowed = ""

// Texts the table repeats.
const (
	notInReach   = "task c is not yours or a descendant of yours"
	pushers      = "only a person, or the task's own agent, pushes a task's branch"
	interruptC   = "only task p, the direct parent of task c, may interrupt it"
	stopC        = "only task p, the direct parent of task c, may stop it"
	personAnswer = "only a person answers user questions"
	noTools      = "people use the CLI or the TUI, not MCP tools"
)

func personOnly(refusal string) [relCount]string {
	return [relCount]string{refusal, refusal, refusal, refusal, allowed, refusal}
}

// authTable is every action of may × every relation: what each may do to
// task c, or for the actions on no task, at all.
var authTable = []struct {
	act  Action
	on   core.Task
	want [relCount]string // self, direct parent, ancestor, sibling, operator, external
}{
	{ActEdit, authC, [relCount]string{allowed, allowed, allowed, notInReach, allowed, allowed}},
	{ActSetStatus, authC, [relCount]string{allowed, allowed, allowed, notInReach, allowed, allowed}},
	{ActMarkDone, authC, [relCount]string{
		`no role marks its own task done: hand task c on for sign-off (handoff_task_kandev to "back")`,
		allowed, allowed, notInReach, allowed, allowed}},
	{ActBlock, authC, [relCount]string{allowed, allowed, allowed, notInReach, allowed, allowed}},
	{ActArchive, authC, [relCount]string{allowed, allowed, allowed, notInReach, allowed, allowed}},
	{ActReview, authC, [relCount]string{allowed, allowed, allowed, notInReach, allowed, allowed}},
	{ActDiff, authC, [relCount]string{allowed, allowed, allowed, notInReach, allowed, allowed}},
	{ActMerge, authC, [relCount]string{allowed, allowed, allowed, notInReach, allowed, allowed}},
	{ActDiscard, authC, [relCount]string{allowed, allowed, allowed, notInReach, allowed, allowed}},
	{ActRequestReview, authC, [relCount]string{allowed, allowed, allowed, notInReach, allowed, allowed}},
	{ActPush, authC, [relCount]string{allowed, pushers, pushers, notInReach, allowed, pushers}},
	{ActHandoff, authC, [relCount]string{allowed, allowed, allowed,
		"task c is neither your task nor in your subtree", allowed, "the external surface cannot hand tasks on"}},
	{ActCreateChild, authC, [relCount]string{allowed, allowed, allowed,
		"task c is outside your subtree; create subtasks under your own task or its descendants", allowed, allowed}},
	{ActStart, authC, [relCount]string{
		"task c is not in your subtree; only the operator or an ancestor task starts it", allowed, allowed,
		"task c is not in your subtree; only the operator or an ancestor task starts it", allowed, allowed}},
	{ActMessage, authC, [relCount]string{allowed, allowed, allowed, allowed, allowed, "the external surface cannot message tasks"}},
	{ActInterrupt, authC, [relCount]string{interruptC, allowed, interruptC, interruptC, allowed, interruptC}},
	{ActStop, authC, [relCount]string{stopC, allowed, stopC, stopC, allowed, "the external surface cannot stop tasks"}},
	{ActAnswer, core.Task{}, personOnly(personAnswer)},
	{ActAskParent, authC, [relCount]string{
		"task c is not on autopilot; ask the operator with ask_user_question_kandev",
		"task c is not on autopilot; ask the operator with ask_user_question_kandev",
		"task c is not on autopilot; ask the operator with ask_user_question_kandev",
		"task c is not on autopilot; ask the operator with ask_user_question_kandev",
		"task c is not on autopilot; ask the operator with ask_user_question_kandev",
		"task c is not on autopilot; ask the operator with ask_user_question_kandev"}},
	{ActDropQueued, authC, personOnly("only the operator drops queued messages")},
	{ActPrune, core.Task{}, [relCount]string{
		"only the operator prunes worktrees", "only the operator prunes worktrees", "only the operator prunes worktrees",
		"only the operator prunes worktrees", allowed, allowed}},
	{ActSetBudget, core.Task{}, personOnly("only a person sets a budget")},
	{ActAddProfile, core.Task{}, [relCount]string{allowed, allowed, allowed, allowed, allowed, "the external surface cannot edit profiles"}},
	{ActRemoveProfile, core.Task{}, [relCount]string{allowed, allowed, allowed, allowed, allowed, "the external surface cannot edit profiles"}},
	{ActAddRole, core.Task{}, personOnly("only a person may add roles")},
	{ActEditRole, core.Task{}, personOnly("only a person may edit roles")},
	{ActRemoveRole, core.Task{}, personOnly("only a person may remove roles")},
	{ActAddPerson, core.Task{}, personOnly("only a person may add people")},
	{ActAddHost, core.Task{}, personOnly("only a person may add hosts")},
	{ActRemoveHost, core.Task{}, personOnly("only a person may remove hosts")},
	{ActUseTools, core.Task{}, [relCount]string{allowed, allowed, allowed, allowed, noTools, allowed}},
	// ActReply turns on its question: without one, may refuses it.
	{ActReply, authC, [relCount]string{
		"no rule lets anyone reply to task c", "no rule lets anyone reply to task c", "no rule lets anyone reply to task c",
		"no rule lets anyone reply to task c", "no rule lets anyone reply to task c", "no rule lets anyone reply to task c"}},
}

// checkRefusal fails unless err is want: nil for allowed, else a
// core.CodeForbidden error of exactly that text.
func checkRefusal(t *testing.T, what string, err error, want string) {
	t.Helper()
	switch {
	case want == allowed && err != nil:
		t.Errorf("%s: refused (%v), want allowed", what, err)
	case want != allowed && err == nil:
		t.Errorf("%s: allowed, want refused: %s", what, want)
	case want != allowed && (core.CodeOf(err) != core.CodeForbidden || err.Error() != want):
		t.Errorf("%s: got %s %q\n\twant forbidden %q", what, core.CodeOf(err), err.Error(), want)
	}
}

func TestAuthorizeTable(t *testing.T) {
	e := authEngine()
	covered := map[Action]bool{}
	for _, row := range authTable {
		covered[row.act] = true
		for rel := 0; rel < relCount; rel++ {
			err := e.auth.may(relActors[rel], row.act, row.on)
			checkRefusal(t, fmt.Sprintf("%s, by c's %s", row.act, relNames[rel]), err, row.want[rel])
		}
	}
	for act := actNone + 1; act < actCount; act++ {
		if !covered[act] {
			t.Errorf("action %d (%s) has no row in authTable", act, act)
		}
		if actionVerbs[act] == "" {
			t.Errorf("action %d has no verb", act)
		}
	}
	if err := e.auth.may(operator, actNone, authC); core.CodeOf(err) != core.CodeForbidden {
		t.Errorf("an action without a rule: %v, want refused", err)
	}
}

// A root has no parent: only a person interrupts or stops it, whoever
// else asks.
func TestAuthorizeRoot(t *testing.T) {
	e := authEngine()
	for _, c := range []struct {
		name string
		a    core.Actor
		act  Action
		want string
	}{
		{"its own agent interrupts", agentActor("g"), ActInterrupt, "only the operator may interrupt task g: it is a root task and has no parent"},
		{"a descendant interrupts", agentActor("p"), ActInterrupt, "only the operator may interrupt task g: it is a root task and has no parent"},
		{"an unrelated agent stops", agentActor("u"), ActStop, "only the operator may stop task g: it is a root task and has no parent"},
		{"the operator interrupts", operator, ActInterrupt, allowed},
		{"another person stops", alice, ActStop, allowed},
		{"the external surface interrupts", ext, ActInterrupt, "only the operator may interrupt task g: it is a root task and has no parent"},
		{"the external surface stops", ext, ActStop, "the external surface cannot stop tasks"},
		{"its own agent starts", agentActor("g"), ActStart, "task g is not in your subtree; only the operator or an ancestor task starts it"},
		{"a descendant starts", agentActor("c"), ActStart, "task g is not in your subtree; only the operator or an ancestor task starts it"},
	} {
		checkRefusal(t, c.name, e.auth.may(c.a, c.act, authG), c.want)
	}
}

// Asking the parent: only an autopilot child has one to ask, whether the
// tool is called (CallTool, mayCall) or reached (askParent, may).
func TestAuthorizeAskParent(t *testing.T) {
	e := authEngine()
	const (
		normal     = "task c is not on autopilot; ask the operator with ask_user_question_kandev"
		normalRoot = "task u is not on autopilot; ask the operator with ask_user_question_kandev"
		apRoot     = "no parent to ask: task a is an autopilot root; decide with your best judgment and state your assumptions"
	)
	for _, c := range []struct {
		name string
		t    core.Task
		want string
	}{
		{"an autopilot child", authAC, allowed},
		{"an autopilot root", authA, apRoot},
		{"a normal child", authC, normal},
		{"a normal root", authU, normalRoot},
	} {
		checkRefusal(t, "may: "+c.name, e.auth.may(agentActor(c.t.ID), ActAskParent, c.t), c.want)
	}

	// mayCall: a session whose set lacks the tool.
	without := capability.Resolve(capability.Case{Surface: capability.KanbanTask})
	if without.Has(capability.AskParent) {
		t.Fatalf("a normal root's set has %s", capability.AskParent)
	}
	notIn := func(name string) string {
		return fmt.Sprintf("tool %s is not available to this session (surface %s)", name, without.Surface)
	}
	for _, c := range []struct {
		name string
		a    core.Actor
		tool string
		want string
	}{
		{"an autopilot root asks its parent", agentActor("a"), capability.AskParent, apRoot},
		{"a normal task asks its parent", agentActor("c"), capability.AskParent, notIn(capability.AskParent)},
		{"an autopilot child whose set lacks it", agentActor("ac"), capability.AskParent, notIn(capability.AskParent)},
		{"the external surface asks a parent", ext, capability.AskParent, notIn(capability.AskParent)},
		{"an autopilot root, another tool", agentActor("a"), "set_task_title_kandev", notIn("set_task_title_kandev")},
	} {
		checkRefusal(t, "mayCall: "+c.name, e.auth.mayCall(c.a, without, c.tool), c.want)
	}
	with := capability.Resolve(capability.Case{Surface: capability.KanbanTask, Autopilot: true, HasParent: true})
	checkRefusal(t, "mayCall: a tool in the set", e.auth.mayCall(agentActor("a"), with, capability.AskParent), allowed)
}

// Each kind of question has one answerer: a parent question the parent
// asked (ActReply), the others a person (ActAnswer).
func TestAuthorizeAnswer(t *testing.T) {
	e := authEngine()
	parentQ := questionMeta{QuestionID: "q1", Kind: core.QuestionParent, ParentTaskID: "p"}
	userQ := questionMeta{QuestionID: "q2", Kind: core.QuestionUser}
	permQ := questionMeta{QuestionID: "q3", Kind: core.QuestionPermission}
	const (
		notAsked  = "only task p, the direct parent that was asked, or a person holding it, may answer question q1; to give task c new input instead, send a message without reply_to_question_id"
		forParent = "question q1 is for task p, the parent of task c; only it, or a person holding it, may answer. To give task c new input instead, send a message (kandev task message c TEXT), which supersedes the question"
	)
	forOperator := func(q string) string {
		return "question " + q + " is for the operator (kandev task answer c); agents cannot answer it"
	}
	same := func(s string) [relCount]string { return [relCount]string{s, s, s, s, s, s} }
	for _, c := range []struct {
		act  Action
		q    questionMeta
		want [relCount]string
	}{
		{ActReply, parentQ, [relCount]string{notAsked, allowed, notAsked, notAsked, notAsked, notAsked}},
		{ActReply, userQ, same(forOperator("q2"))},
		{ActReply, permQ, same(forOperator("q3"))},
		{ActAnswer, parentQ, [relCount]string{personAnswer, personAnswer, personAnswer, personAnswer, forParent, personAnswer}},
		{ActAnswer, userQ, personOnly(personAnswer)},
		{ActAnswer, permQ, personOnly(personAnswer)},
	} {
		for rel := 0; rel < relCount; rel++ {
			err := e.auth.mayAnswer(relActors[rel], c.act, authC, c.q)
			checkRefusal(t, fmt.Sprintf("%s %s question, by c's %s", c.act, c.q.Kind, relNames[rel]), err, c.want[rel])
		}
	}
	// Any other action goes to may.
	checkRefusal(t, "mayAnswer of a stop", e.auth.mayAnswer(agentActor("s"), ActStop, authC, userQ), stopC)

	// While p is with the operator (escalated to them), the operator
	// answers its child's question in its place, by either path; p's agent
	// still may; nobody else, not another person (ADR 0069).
	held := authP
	held.Assignee = &core.Ref{Kind: core.RefPerson, Name: core.Operator}
	e.k.cache.tasks["p"] = &held
	for _, c := range []struct {
		act  Action
		want [relCount]string
	}{
		{ActReply, [relCount]string{notAsked, allowed, notAsked, notAsked, allowed, notAsked}},
		{ActAnswer, [relCount]string{personAnswer, personAnswer, personAnswer, personAnswer, allowed, personAnswer}},
	} {
		for rel := 0; rel < relCount; rel++ {
			err := e.auth.mayAnswer(relActors[rel], c.act, authC, parentQ)
			checkRefusal(t, fmt.Sprintf("%s of a held parent's question, by c's %s", c.act, relNames[rel]), err, c.want[rel])
		}
	}
	checkRefusal(t, "another person answers for a parent the operator holds", e.auth.mayAnswer(alice, ActAnswer, authC, parentQ), forParent)
	held.Assignee = &core.Ref{Kind: core.RefPerson, Name: "alice"}
	checkRefusal(t, "alice answers for a parent she holds", e.auth.mayAnswer(alice, ActAnswer, authC, parentQ), allowed)
	checkRefusal(t, "the operator answers for a parent alice holds", e.auth.mayAnswer(operator, ActAnswer, authC, parentQ), forParent)
}

// A sandboxed agent cannot widen its own or its children's reach by
// adding a profile. (Removing one is not checked, as before issue 24.)
func TestAuthorizeConfined(t *testing.T) {
	e := authEngine()
	checkRefusal(t, "a sandboxed agent adds a profile", e.auth.may(agentActor("x"), ActAddProfile, core.Task{}),
		"task x runs in sandbox bwrap: its agent cannot edit profiles")
	checkRefusal(t, "a sandboxed agent removes a profile", e.auth.may(agentActor("x"), ActRemoveProfile, core.Task{}), allowed)
	checkRefusal(t, "a sandboxed agent edits its own task", e.auth.may(agentActor("x"), ActEdit, authX), allowed)
}
