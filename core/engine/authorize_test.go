package engine

import (
	"testing"

	"github.com/kandev/kandev/core"
)

// The tree of these tests: g → p → c, and u apart.
var (
	authG = core.Task{ID: "g"}
	authP = core.Task{ID: "p", ParentID: "g"}
	authC = core.Task{ID: "c", ParentID: "p"}
	authU = core.Task{ID: "u"}
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
	e := &Engine{cache: newTaskCache(), live: newLiveRuns()}
	for _, t := range []core.Task{authG, authP, authC, authU} {
		t := t
		e.cache.tasks[t.ID] = &t
		role := "eng"
		if t.ID == "u" {
			role = "ops"
		}
		e.live.sessions["s-"+t.ID] = &liveRun{sessionID: "s-" + t.ID, role: role}
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
		if got := e.above(c.a, c.task); got != c.above {
			t.Errorf("%s: above(%s) = %v, want %v", c.name, c.task, got, c.above)
		}
		if got := e.inSubtree(c.a, c.task); got != c.inSubtree {
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
		if got := e.holder(c.a, c.t); got != c.want {
			t.Errorf("%s: holder = %v, want %v", c.name, got, c.want)
		}
	}
}
