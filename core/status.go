package core

import "fmt"

// Status is where a task stands in its workflow.
type Status string

const (
	StatusTodo       Status = "todo"
	StatusInProgress Status = "in_progress"
	StatusReview     Status = "review"
	StatusDone       Status = "done"
	StatusCancelled  Status = "cancelled"
)

// Statuses lists every status in workflow order.
var Statuses = []Status{StatusTodo, StatusInProgress, StatusReview, StatusDone, StatusCancelled}

// transitions is the one table that decides which status changes are legal.
// Done and cancelled are terminal for the engine; only reopening leaves them.
var transitions = map[Status][]Status{
	StatusTodo:       {StatusInProgress, StatusReview, StatusDone, StatusCancelled},
	StatusInProgress: {StatusTodo, StatusReview, StatusDone, StatusCancelled},
	StatusReview:     {StatusTodo, StatusInProgress, StatusDone, StatusCancelled},
	StatusDone:       {StatusTodo, StatusInProgress},
	StatusCancelled:  {StatusTodo},
}

// ParseStatus checks a status name.
func ParseStatus(s string) (Status, error) {
	for _, st := range Statuses {
		if string(st) == s {
			return st, nil
		}
	}
	return "", Errorf(CodeValidation, "unknown status %q (want one of todo, in_progress, review, done, cancelled)", s)
}

// CheckTransition allows staying put and every move the table lists, and
// refuses the rest naming both states.
func CheckTransition(from, to Status) error {
	if from == to {
		return nil
	}
	for _, ok := range transitions[from] {
		if ok == to {
			return nil
		}
	}
	return Errorf(CodeConflict, "cannot move a task from %s to %s", from, to)
}

// Terminal reports whether a status ends the task's work.
func (s Status) Terminal() bool { return s == StatusDone || s == StatusCancelled }

// Active reports whether work is under way or expected (todo, in_progress, review).
func (s Status) Active() bool { return !s.Terminal() }

func (s Status) String() string { return string(s) }

var _ fmt.Stringer = StatusTodo
