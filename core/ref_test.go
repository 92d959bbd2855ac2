package core

import (
	"encoding/json"
	"testing"
)

func TestRefStringParse(t *testing.T) {
	for _, c := range []struct {
		ref  Ref
		text string
	}{
		{RoleRef("eng"), "role:eng"},
		{PersonRef("alice"), "person:alice"},
		{OperatorRef(), "person:operator"},
		{TaskRef("k3f9qa"), "task:k3f9qa"},
	} {
		if got := c.ref.String(); got != c.text {
			t.Errorf("%+v.String() = %q, want %q", c.ref, got, c.text)
		}
		if got, ok := ParseRef(c.text); !ok || got != c.ref {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v", c.text, got, ok, c.ref)
		}
		if p := ParseRefPtr(c.text); p == nil || *p != c.ref {
			t.Errorf("ParseRefPtr(%q) = %v", c.text, p)
		}
	}
	for _, s := range []string{"", "kandev", "external", "role:", "team:x", ":eng", "roleeng"} {
		if got, ok := ParseRef(s); ok {
			t.Errorf("ParseRef(%q) = %+v, want no ref", s, got)
		}
		if p := ParseRefPtr(s); p != nil {
			t.Errorf("ParseRefPtr(%q) = %+v, want nil", s, p)
		}
	}
}

func TestRefPredicates(t *testing.T) {
	for _, c := range []struct {
		ref                         Ref
		role, person, task, operatr bool
		eng                         bool // IsRoleNamed("eng")
	}{
		{RoleRef("eng"), true, false, false, false, true},
		{RoleRef("ops"), true, false, false, false, false},
		{PersonRef("eng"), false, true, false, false, false},
		{OperatorRef(), false, true, false, true, false},
		{TaskRef("eng"), false, false, true, false, false},
		{Ref{}, false, false, false, false, false},
	} {
		if c.ref.IsRole() != c.role || c.ref.IsPerson() != c.person || c.ref.IsTask() != c.task ||
			c.ref.IsOperator() != c.operatr || c.ref.IsRoleNamed("eng") != c.eng {
			t.Errorf("%+v: role %v person %v task %v operator %v eng %v", c.ref,
				c.ref.IsRole(), c.ref.IsPerson(), c.ref.IsTask(), c.ref.IsOperator(), c.ref.IsRoleNamed("eng"))
		}
	}
}

// The wire shape of an assignee is {"kind":...,"name":...}, as before Ref.
func TestRefJSON(t *testing.T) {
	b, err := json.Marshal(Task{ID: "a", Assignee: &Ref{Kind: RefRole, Name: "eng"}, HandedBy: &Ref{Kind: RefTask, Name: "p1"}})
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if got := string(raw["assignee"]); got != `{"kind":"role","name":"eng"}` {
		t.Errorf("assignee %s", got)
	}
	if got := string(raw["handed_by"]); got != `{"kind":"task","name":"p1"}` {
		t.Errorf("handed_by %s", got)
	}
	var back Task
	if err := json.Unmarshal(b, &back); err != nil || *back.Assignee != RoleRef("eng") || *back.HandedBy != TaskRef("p1") {
		t.Fatalf("round trip: %+v %v", back, err)
	}
}

// One label for authors in both front ends: the TUI's (a task author reads
// "task ID"; the CLI used to print "task:ID").
func TestAuthorLabel(t *testing.T) {
	for in, want := range map[string]string{
		"person:operator": "you",
		"person:alice":    "alice",
		"task:k3f9qa":     "task k3f9qa",
		"role:eng":        "role:eng",
		"":                "kandev",
		"kandev":          "kandev",
		"external":        "external",
	} {
		if got := AuthorLabel(in); got != want {
			t.Errorf("AuthorLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestActorRef(t *testing.T) {
	for _, c := range []struct {
		a    Actor
		want string
	}{
		{OperatorActor(), "person:operator"},
		{Actor{Kind: ActorAgent, TaskID: "t1", SessionID: "s"}, "task:t1"},
		{Actor{Kind: ActorRole, Name: "eng"}, "role:eng"},
		{Actor{Kind: ActorExternal}, "external"},
	} {
		if got := c.a.String(); got != c.want {
			t.Errorf("%+v.String() = %q, want %q", c.a, got, c.want)
		}
		if back := ParseActor(c.want); back.String() != c.want {
			t.Errorf("ParseActor(%q) = %+v", c.want, back)
		}
	}
}
