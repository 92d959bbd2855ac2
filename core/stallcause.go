package core

import (
	"encoding/json"
	"strings"
)

// StallCause says why a role stalled on a task: what its turn left
// undone. Code decides on it (an alarm or "back to you", how a notice
// words it); the Detail's text is for people. See ADR 0058.
type StallCause string

const (
	// CauseTurnEnded: the turn ended without handing the task on; the
	// Detail is the agent's last words.
	CauseTurnEnded StallCause = "turn_ended"
	// CauseRunFailed: the role's run failed.
	CauseRunFailed StallCause = "run_failed"
	// CauseUnansweredQuestion: the turn ended leaving a subtask's
	// question unanswered, and the subtask waits on it.
	CauseUnansweredQuestion StallCause = "unanswered_question"
	// CauseStalledSubtask: the turn ended without acting on a subtask's
	// stall report, and nothing else runs in the tree.
	CauseStalledSubtask StallCause = "stalled_subtask"
	// CauseBudget: the subtree spent its budget (Reason StallBudget).
	CauseBudget StallCause = "budget_reached"
)

// Alarm reports whether a stall of this cause stays an alarm wherever it
// goes: everything but a turn that merely ended, which going back to the
// person who handed the task over is their turn again (ADR 0025).
func (c StallCause) Alarm() bool { return c != CauseTurnEnded }

// The Details of these causes begin so. Code tests Cause; the prefixes
// are for people, and for reading stalls stored before Cause existed.
const (
	// StallUnansweredPrefix starts the Detail of CauseUnansweredQuestion.
	StallUnansweredPrefix = "unanswered question "
	// StallSubtaskPrefix starts the Detail of CauseStalledSubtask.
	StallSubtaskPrefix = "stalled subtask "
)

// legacyStallCause classifies a stall stored before Cause existed, by the
// rule the engine then applied to its text. It runs once, as the row is
// read (ParseStoredStall).
func legacyStallCause(reason, detail string, failed bool) StallCause {
	switch {
	case failed:
		return CauseRunFailed
	case reason == StallBudget:
		return CauseBudget
	case strings.HasPrefix(detail, StallUnansweredPrefix):
		return CauseUnansweredQuestion
	case strings.HasPrefix(detail, StallSubtaskPrefix):
		return CauseStalledSubtask
	}
	return CauseTurnEnded
}

// StoredJSON is the stall as the tasks.stalled column keeps it: the wire
// shape plus its cause. The wire (--json, the daemon's HTTP API) carries
// no cause, so that its shape stays what clients know; the decisions that
// need the cause are the engine's, which reads the store.
func (s Stall) StoredJSON() string {
	type plain Stall
	b, err := json.Marshal(struct {
		plain
		Cause StallCause `json:"cause,omitempty"`
	}{plain(s), s.Cause})
	if err != nil {
		return "{}"
	}
	return string(b)
}

// ParseStoredStall reads a tasks.stalled row. A row stored before Cause
// existed gets its cause by the old rule, here, once: nothing after the
// store's boundary reads a stall's text to decide.
func ParseStoredStall(stored string) (Stall, error) {
	var st Stall
	if err := json.Unmarshal([]byte(stored), &st); err != nil {
		return Stall{}, err
	}
	if st.Cause == "" {
		st.Cause = legacyStallCause(st.Reason, st.Detail, st.Failed)
	}
	return st, nil
}
