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
// Then every task with a cut prompt queued again (by this recovery, an
// earlier one a crash cut short, or a clean shutdown) resumes its agent's
// session and gets it delivered, unless NoResume leaves them for the next
// message or start (ADR 0026).
func (e *Engine) Recover(ctx context.Context) error {
	live, err := e.db.LiveSessions(ctx)
	if err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	// No agent's permission request outlives its daemon: their questions
	// can no longer be answered, and a prompt they cut is delivered again.
	if pending, err := e.db.PendingQuestions(ctx); err == nil {
		for _, m := range pending {
			if q, err := parseQuestion(m); err == nil && q.Kind == core.QuestionPermission {
				e.stalePermission(ctx, m.TaskID, "", "the kandev daemon exited while the agent's request waited")
			}
		}
	}
	for i, s := range live {
		killed := killOrphan(s)
		reason := fmt.Sprintf("%sexited while this session was %s", core.SessionInterruptedPrefix, s.State)
		msg := reason
		if killed {
			msg += fmt.Sprintf("; its leftover processes (agent pid %d) were killed", s.PID)
		}
		// The requeue, the session's end and the note are one
		// transaction: a crash in between must not leave the session
		// live with its prompt queued, or the next start queues it again.
		st := string(core.SessionCancelled)
		now := time.Now().UTC()
		err := e.commit(ctx, func(tx *store.Tx, c *changes) error {
			if err := e.requeueOpenPrompt(ctx, tx.Queries, s.TaskID, s.ID); err != nil {
				return err
			}
			if e.opts.DuringRecovery != nil {
				e.opts.DuringRecovery(i)
			}
			if err := tx.UpdateSession(ctx, s.ID, store.SessionUpdate{State: &st, Error: &reason}, now); err != nil {
				return err
			}
			if err := tx.RevokeSessionTokens(ctx, s.ID, now); err != nil {
				return err
			}
			note, err := tx.InsertMessage(ctx, store.Message{TaskID: s.TaskID, SessionID: s.ID, Kind: string(core.MsgStatus),
				Author: "kandev", Text: msg, Meta: metaJSON(map[string]any{"interrupted": true}), CreatedAt: now, UpdatedAt: now})
			if err != nil {
				return err
			}
			c.session(s.ID)
			c.addMessage(note)
			c.touch(s.TaskID)
			// The task keeps its status: an interrupted run is no
			// transition (its cut prompt is queued again; a question it
			// waits on still waits).
			return nil
		})
		if err != nil {
			return fmt.Errorf("recover session %s of task %s: %w", s.ID, s.TaskID, err)
		}
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
	if err := e.sweep(ctx); err != nil {
		return err
	}
	return e.resumeInterrupted(ctx)
}

// resumeInterrupted kicks the turn loop of every task with a redelivery
// queued, after the sweep: a task the sweep escalated or a stop holds is
// skipped by the loop as it would be for any input.
func (e *Engine) resumeInterrupted(ctx context.Context) error {
	ids, err := e.db.RedeliveryQueues(ctx)
	if err != nil {
		return fmt.Errorf("resume interrupted runs: %w", err)
	}
	for _, id := range ids {
		if e.opts.NoResume {
			e.log.Info("interrupted run left for an explicit start (--no-resume)", "task", id)
			continue
		}
		e.log.Info("resuming an interrupted run", "task", id)
		e.kick(id)
	}
	return nil
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
