package engine

import (
	"context"
	"math"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// TaskStats serves api.Client's operation of that name: it counts the cached tasks a listing
// with in would show (TaskSnapshot), so it reads no row from the database.
func (ts *Tasks) TaskStats(ctx context.Context, in api.ListTasksInput) (api.TaskStats, error) {
	tasks, err := ts.TaskSnapshot(ctx, in)
	if err != nil {
		return api.TaskStats{}, err
	}
	st := api.TaskStats{ByStatus: map[core.Status]int{}, BySandbox: map[string]int{}, ByHost: map[string]int{}}
	for _, t := range tasks {
		st.Tasks++
		st.ByStatus[t.Status]++
		sandbox := t.Sandbox
		if sandbox == "" {
			sandbox = core.SandboxNone
		}
		st.BySandbox[sandbox]++
		host := t.Host
		if host == "" {
			host = hostLocal
		}
		st.ByHost[host]++
		if t.Running() {
			st.Running++
		}
		if q := t.PendingQuestion; q != nil && q.Status == core.QuestionPending {
			st.PendingQuestions++
		}
		if t.YourTurn {
			st.YourTurn++
		}
		if t.Stalled != nil {
			st.Stalled++
		}
		st.Queued += t.Queued
		if t.Usage != nil {
			addSpend(&st.Spend, t.Usage.Own)
		}
	}
	return st, nil
}

// addSpend adds s to total, each currency apart (ADR 0075): the total's
// own currency is the first met with a cost, the others are its Others.
func addSpend(total *core.Spend, s core.Spend) {
	total.Tokens += s.Tokens
	total.Input += s.Input
	total.Output += s.Output
	total.Thought += s.Thought
	total.CacheRead += s.CacheRead
	total.CacheWrite += s.CacheWrite
	for _, c := range s.Costs() {
		if c.Amount != 0 {
			addMicros(total, c.Currency, int64(math.Round(c.Amount*microsPerUnit)))
		}
	}
}
