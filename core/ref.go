package core

import "strings"

// RefKind says what a Ref names.
type RefKind string

const (
	// RefRole names a role: its agent runs the task.
	RefRole RefKind = "role"
	// RefPerson names a person (the operator is one).
	RefPerson RefKind = "person"
	// RefTask names a task by ID: a task handed back to the task that
	// delegated it (its agent signs it off), or a task's agent as the
	// author of a message or the creator of a subtask.
	RefTask RefKind = "task"
)

// Ref names whoever holds, hands over or writes something: a role, a
// person or a task. Its JSON is {"kind": ..., "name": ...}; its stored
// form (assignee and handed_by columns, message authors, queue senders,
// created_by) is String's "kind:name".
type Ref struct {
	Kind RefKind `json:"kind"`
	Name string  `json:"name"`
}

// RoleRef names a role.
func RoleRef(name string) Ref { return Ref{Kind: RefRole, Name: name} }

// PersonRef names a person.
func PersonRef(name string) Ref { return Ref{Kind: RefPerson, Name: name} }

// TaskRef names a task by ID.
func TaskRef(id string) Ref { return Ref{Kind: RefTask, Name: id} }

// OperatorRef names the operator.
func OperatorRef() Ref { return PersonRef(Operator) }

// String is the stored form: "role:eng", "person:alice", "task:k3f9qa".
func (r Ref) String() string { return string(r.Kind) + ":" + r.Name }

// IsRole reports whether r names a role.
func (r Ref) IsRole() bool { return r.Kind == RefRole }

// IsPerson reports whether r names a person.
func (r Ref) IsPerson() bool { return r.Kind == RefPerson }

// IsTask reports whether r names a task.
func (r Ref) IsTask() bool { return r.Kind == RefTask }

// IsOperator reports whether r names the operator.
func (r Ref) IsOperator() bool { return r == OperatorRef() }

// IsRoleNamed reports whether r names the role called name.
func (r Ref) IsRoleNamed(name string) bool { return r == RoleRef(name) }

// Label names r as the operator thinks of it: "you", a person's name,
// "task ID", or the stored form of a role.
func (r Ref) Label() string {
	switch {
	case r.IsOperator():
		return "you"
	case r.IsPerson():
		return r.Name
	case r.IsTask():
		return "task " + r.Name
	}
	return r.String()
}

// Describe is "kind name", as sentences name a Ref: "role eng".
func (r Ref) Describe() string { return string(r.Kind) + " " + r.Name }

// ParseRef reads the stored form back. It reports false for anything
// else: "", "kandev", "external", an unknown kind or an empty name.
func ParseRef(s string) (Ref, bool) {
	kind, name, ok := strings.Cut(s, ":")
	if !ok || name == "" {
		return Ref{}, false
	}
	switch k := RefKind(kind); k {
	case RefRole, RefPerson, RefTask:
		return Ref{Kind: k, Name: name}, true
	}
	return Ref{}, false
}

// ParseRefPtr is ParseRef for optional fields: nil when s names nothing.
func ParseRefPtr(s string) *Ref {
	r, ok := ParseRef(s)
	if !ok {
		return nil
	}
	return &r
}

// AuthorLabel names the author (or sender) of a message as both front
// ends show it: "kandev" for the engine's own notes, Label for a Ref, and
// anything else ("external") as it is.
func AuthorLabel(author string) string {
	if author == "" {
		return "kandev"
	}
	if r, ok := ParseRef(author); ok {
		return r.Label()
	}
	return author
}
