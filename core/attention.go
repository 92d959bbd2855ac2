package core

// Urgency ranks how soon a task needs a person. Every front end and the
// daemon's notifications rank "needs you" by it (Attention), so `kandev
// status`, the TUI's counts and its `w` key, and a notification agree.
type Urgency int

const (
	// UrgencyNone: nothing waits on a person (running, done, merged away,
	// or a role's to move).
	UrgencyNone Urgency = iota
	// UrgencyReview: work handed back to you to look at: assigned to you,
	// or back to you after its agent ended a turn without handing it on.
	UrgencyReview
	// UrgencyAttention: something went wrong or asks you without holding
	// an agent: a question whose agent is no longer in its call, a stall
	// with nobody to escalate to, an escalation, a run a daemon exit cut
	// short.
	UrgencyAttention
	// UrgencyBlocking: an agent sits in a call until you answer: a
	// permission request, or a question asked in a live turn.
	UrgencyBlocking
)

// Urgent reports whether the urgency is above review: a person is waited
// on, not merely handed work.
func (u Urgency) Urgent() bool { return u >= UrgencyAttention }

func (u Urgency) String() string {
	return [...]string{"none", "review", "attention", "blocking"}[u]
}

// Attention says how urgently t needs a person and why, in one word or
// two ("permission", "question", "stuck", "escalated", "interrupted",
// "escalated to alice", "your turn", "back to you"); Why is "" when it
// needs nobody. Finished work needs nobody: done, cancelled, archived, or
// its worktree discarded.
type Attention struct {
	Urgency Urgency `json:"urgency"`
	Why     string  `json:"why"`
}

// NeedsYou ranks t. A person other than the operator who holds an
// escalated task is a person waited on too, so it counts. A task whose
// tree spent its budget (or holds for spend kandev could not count) says
// "budget" whatever else holds it: one story for status, the web inbox,
// wait and the TUI (issue 37).
func (t *Task) NeedsYou() Attention {
	a := t.needsYou()
	if a.Urgency != UrgencyNone && t.OverBudget() {
		a.Why = "budget"
	}
	return a
}

func (t *Task) needsYou() Attention {
	if t == nil || t.Archived || t.Status.Terminal() || (t.Workspace != nil && t.Workspace.Mode == WorkspaceDiscarded) {
		return Attention{}
	}
	if q := t.PendingQuestion; q != nil && q.Status == QuestionPending && q.Kind.ForPerson() {
		switch {
		case q.Kind == QuestionPermission:
			return Attention{UrgencyBlocking, "permission"}
		case t.Session != nil && t.Session.State.Live():
			return Attention{UrgencyBlocking, "question"}
		}
		return Attention{UrgencyAttention, "question"}
	}
	switch {
	case t.Stuck():
		return Attention{UrgencyAttention, "stuck"}
	case t.YourTurn && t.Escalated():
		return Attention{UrgencyAttention, "escalated"}
	case t.Interrupted:
		return Attention{UrgencyAttention, "interrupted"}
	case t.Escalated() && t.Assignee != nil && t.Assignee.IsPerson():
		return Attention{UrgencyAttention, "escalated to " + t.Assignee.Name}
	case t.YourTurn && t.BackToYou():
		return Attention{UrgencyReview, "back to you"}
	case t.YourTurn:
		return Attention{UrgencyReview, "your turn"}
	}
	return Attention{}
}

// Running is kandev's one meaning of "running", counted by `kandev
// status`, `daemon status` and the TUI: an agent's turn is under way or
// starting, and it is not waiting on a person (a task whose agent sits in
// a permission or question call waits on you and counts there).
func (t *Task) Running() bool {
	if t == nil || t.Session == nil {
		return false
	}
	if s := t.Session.State; s != SessionRunning && s != SessionStarting {
		return false
	}
	q := t.PendingQuestion
	return q == nil || q.Status != QuestionPending || !q.Kind.ForPerson()
}

// MarshalText writes the urgency by name in JSON.
func (u Urgency) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// UnmarshalText reads an urgency by name.
func (u *Urgency) UnmarshalText(b []byte) error {
	for v := UrgencyNone; v <= UrgencyBlocking; v++ {
		if v.String() == string(b) {
			*u = v
			return nil
		}
	}
	return Errorf(CodeValidation, "unknown urgency %q", b)
}
