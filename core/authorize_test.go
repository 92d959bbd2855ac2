package core

import "testing"

func TestIsDirectParent(t *testing.T) {
	for _, c := range []struct {
		name   string
		parent string
		child  Task
		want   bool
	}{
		{"its parent", "p", Task{ID: "c", ParentID: "p"}, true},
		{"another task", "g", Task{ID: "c", ParentID: "p"}, false},
		{"itself", "c", Task{ID: "c", ParentID: "p"}, false},
		{"a root has no parent", "", Task{ID: "r"}, false},
		{"an empty parent ID names nobody", "", Task{ID: "c", ParentID: ""}, false},
	} {
		if got := IsDirectParent(c.parent, c.child); got != c.want {
			t.Errorf("%s: IsDirectParent(%q, %+v) = %v, want %v", c.name, c.parent, c.child, got, c.want)
		}
	}
}

func TestMayInterrupt(t *testing.T) {
	child := Task{ID: "c", ParentID: "p"}
	root := Task{ID: "p"}
	agent := func(id string) Actor { return Actor{Kind: ActorAgent, TaskID: id} }
	for _, c := range []struct {
		name string
		a    Actor
		t    Task
		want bool
	}{
		{"the operator, a child", OperatorActor(), child, true},
		{"the operator, a root", OperatorActor(), root, true},
		{"another person", Actor{Kind: ActorPerson, Name: "alice"}, child, true},
		{"its direct parent", agent("p"), child, true},
		{"its grandparent", agent("g"), Task{ID: "c", ParentID: "p"}, false},
		{"its own agent", agent("c"), child, false},
		{"a sibling", agent("s"), child, false},
		{"any agent, of a root", agent("p"), root, false},
		{"the external surface", Actor{Kind: ActorExternal}, child, false},
		{"nobody", Actor{}, child, false},
	} {
		if got := MayInterrupt(c.a, c.t); got != c.want {
			t.Errorf("%s: MayInterrupt = %v, want %v", c.name, got, c.want)
		}
	}
}
