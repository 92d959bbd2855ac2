package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/store"
)

// Recover runs once at daemon start: sessions the previous daemon left
// live are marked interrupted (their orphaned process groups killed), the
// prompt of any turn they cut short goes back to the front of the queue,
// and user questions whose waiting call died now wait for the next turn.
// Nothing restarts by itself: the next message resumes the agent.
func (e *Engine) Recover(ctx context.Context) error {
	live, err := e.db.LiveSessions(ctx)
	if err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	for _, s := range live {
		killed := killOrphan(s)
		e.requeueOpenPrompt(ctx, s.TaskID, s.ID)
		reason := fmt.Sprintf("interrupted: the kandev daemon exited while this session was %s", s.State)
		e.finishSession(s.ID, core.SessionCancelled, reason)
		msg := reason
		if killed {
			msg += fmt.Sprintf("; its leftover processes (agent pid %d) were killed", s.PID)
		}
		e.note(ctx, s.TaskID, s.ID, core.MsgStatus, "kandev", msg, map[string]any{"interrupted": true})
		if t, ok := e.cached(s.TaskID); ok && t.Status == core.StatusInProgress {
			if err := e.db.SetTaskStatus(ctx, s.TaskID, string(core.StatusReview), time.Now().UTC()); err != nil {
				return fmt.Errorf("recover task %s: %w", s.TaskID, err)
			}
		}
		e.refreshQuiet(s.TaskID)
	}
	pending, err := e.db.PendingQuestions(ctx)
	if err != nil {
		return fmt.Errorf("recover questions: %w", err)
	}
	for _, m := range pending {
		if q, err := parseQuestion(m); err == nil && q.Kind == core.QuestionUser && q.Delivery == "waiting_call" {
			e.markNextTurn(m.Seq)
		}
	}
	return e.sweep(ctx)
}

// killOrphan kills every process left of a session the previous daemon
// ran: the agent's process group and anything else that carries the
// session's id in its environment (helpers that left the group, setsid
// grandchildren), so a recycled pid is never touched. It reports whether
// any was found.
func killOrphan(s store.Session) bool {
	return agent.KillSession(s.ID, orphanKillWait) > 0
}

// orphanKillWait bounds the wait for killed orphans to disappear.
const orphanKillWait = 5 * time.Second
