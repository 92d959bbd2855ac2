package core

import (
	"context"
	"strings"
)

// ActorKind says who is acting: a person, an agent working a task, or an
// agent CLI a person runs by hand against the external MCP surface.
type ActorKind string

const (
	ActorPerson   ActorKind = ActorKind(RefPerson)
	ActorAgent    ActorKind = "agent"
	ActorExternal ActorKind = "external"
	// ActorRole is a role named as the actor of a stored change (a
	// handoff by "role:eng"); live callers are never roles.
	ActorRole ActorKind = ActorKind(RefRole)
)

// Operator is the person who runs kandev; every CLI and TUI call acts as them.
const Operator = "operator"

// Actor identifies the caller of an operation. Agents are never trusted to
// name themselves: the daemon derives an agent actor from its session token.
type Actor struct {
	Kind      ActorKind `json:"kind"`
	Name      string    `json:"name,omitempty"`       // person or role name
	TaskID    string    `json:"task_id,omitempty"`    // agent: the task its session works
	SessionID string    `json:"session_id,omitempty"` // agent: the session the token belongs to
}

// OperatorActor is the default actor of the CLI and TUI.
func OperatorActor() Actor { return Actor{Kind: ActorPerson, Name: Operator} }

// String is the stable form stored in created_by and message authors:
// "person:operator", "task:k3f9qa", "role:eng", "external".
func (a Actor) String() string {
	if r, ok := a.Ref(); ok {
		return r.String()
	}
	return string(ActorExternal)
}

// Ref names the actor as a Ref: a person, the task an agent works, or a
// role. The external surface has none.
func (a Actor) Ref() (Ref, bool) {
	switch a.Kind {
	case ActorPerson:
		return PersonRef(a.Name), true
	case ActorAgent:
		return TaskRef(a.TaskID), true
	case ActorRole:
		return RoleRef(a.Name), true
	}
	return Ref{}, false
}

// IsPerson reports whether a human acts.
func (a Actor) IsPerson() bool { return a.Kind == ActorPerson }

// ParseActor reads the stored form back.
func ParseActor(s string) Actor {
	kind, rest, _ := strings.Cut(s, ":")
	switch RefKind(kind) {
	case RefPerson:
		return Actor{Kind: ActorPerson, Name: rest}
	case RefTask:
		return Actor{Kind: ActorAgent, TaskID: rest}
	case RefRole:
		return Actor{Kind: ActorRole, Name: rest}
	default:
		return Actor{Kind: ActorExternal}
	}
}

type actorKey struct{}

// WithActor returns a context that carries the acting identity.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom returns the acting identity; without one, the operator acts.
func ActorFrom(ctx context.Context) Actor {
	if a, ok := ctx.Value(actorKey{}).(Actor); ok {
		return a
	}
	return OperatorActor()
}
