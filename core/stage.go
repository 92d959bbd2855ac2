package core

import "fmt"

// Stage is the status a task is shown with: its stored Status, told apart
// where the status alone would hide that its agent ran (ADR 0070). The
// status itself moves only by the transitions of ADR 0008 (a question
// keeps it, an escalation or a turn that comes back hands the task on as
// todo); the stage is what the tree, `task list`, `task show` and
// `kandev status` show, and what the daemon's task JSON carries as
// "stage". One predicate decides it: StageOf.
type Stage string

const (
	// StageTodo: nobody has started on it: never run, or handed to a
	// role that has not taken its turn yet.
	StageTodo Stage = "todo"
	// StageInProgress: its role is on it (a turn ran or runs; a question
	// keeps it here).
	StageInProgress Stage = "in_progress"
	// StageBack: its agent ran and the task is with a person again without
	// being handed over for review: back to you after a turn that did not
	// hand it on, or escalated to a person (a failed run, a budget reached,
	// a child's question left unanswered).
	StageBack Stage = "back"
	// StageReview: handed to a person or for sign-off, or stopped.
	StageReview Stage = "review"
	// StageDone and StageCancelled: finished.
	StageDone      Stage = "done"
	StageCancelled Stage = "cancelled"
)

// Stages lists every stage in workflow order.
var Stages = []Stage{StageTodo, StageInProgress, StageBack, StageReview, StageDone, StageCancelled}

// StageOf is the one rule that decides how a task's status is shown: its
// status, except that a todo task held by a person after its agent ran
// (it has a session) is back with that person. A nil task is todo.
func StageOf(t *Task) Stage {
	if t == nil {
		return StageTodo
	}
	switch t.Status {
	case StatusInProgress:
		return StageInProgress
	case StatusReview:
		return StageReview
	case StatusDone:
		return StageDone
	case StatusCancelled:
		return StageCancelled
	}
	if t.Session != nil && t.Assignee != nil && t.Assignee.IsPerson() {
		return StageBack
	}
	return StageTodo
}

// Glyph is the stage's mark, which reads without color: ○ todo,
// ● in progress, ◑ back, ◐ review, ✓ done, ✗ cancelled.
func (s Stage) Glyph() string {
	switch s {
	case StageTodo:
		return "○"
	case StageInProgress:
		return "●"
	case StageBack:
		return "◑"
	case StageReview:
		return "◐"
	case StageDone:
		return "✓"
	case StageCancelled:
		return "✗"
	}
	return "?"
}

func (s Stage) String() string { return string(s) }

var _ fmt.Stringer = StageTodo
