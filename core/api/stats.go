package api

import "github.com/kandev/kandev/core"

// TaskStats counts the tasks a listing would show, as the engine's cache
// holds them now: nothing is read from the database for it.
type TaskStats struct {
	Tasks int `json:"tasks"`
	// ByStatus, BySandbox and ByHost count the tasks by their status, the
	// sandbox their agent runs in and their host ("local": this machine).
	ByStatus  map[core.Status]int `json:"by_status"`
	BySandbox map[string]int      `json:"by_sandbox"`
	ByHost    map[string]int      `json:"by_host"`
	// Running counts the tasks whose agent runs now (Task.Running).
	Running int `json:"running"`
	// PendingQuestions counts the tasks waiting on an unanswered question,
	// YourTurn those waiting on the operator, Stalled the escalated ones.
	PendingQuestions int `json:"pending_questions"`
	YourTurn         int `json:"your_turn"`
	Stalled          int `json:"stalled"`
	// Queued counts the messages waiting for the tasks' next turns.
	Queued int `json:"queued"`
	// Spend is what the tasks' agents reported spending, each task's own
	// once; costs in a currency other than the first met are left out.
	Spend core.Spend `json:"spend"`
}
