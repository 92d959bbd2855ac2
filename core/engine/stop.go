package engine

import (
	"context"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/store"
)

// StopTask serves api.Client's operation of that name (rule 3): halt-only, direct-parent-only
// (or a person), idempotent. Under the task's lock the stop fence moves,
// so no launch or delivery already under way goes on; then one
// transaction records everything the stop means (the task halted and in
// review, the run's session cancelled and its token revoked, a pending
// question stale, the note), and one notification step announces it. See
// docs/decisions/0004-stop-fence.md.
func (ch *Chain) StopTask(ctx context.Context, ref string, _ api.StopTaskInput) (api.StopResult, error) {
	actor := core.ActorFrom(ctx)
	t, err := ch.auth.authorized(ctx, actor, ref, ActStop)
	if err != nil {
		return api.StopResult{}, err
	}
	why := "stopped by " + actor.String()
	rt := ch.runs.runtime(t.ID)
	rt.mu.Lock()
	// Live: a run exists, or a turn loop acting under the current fence may
	// be about to launch one.
	live := rt.run != nil || (rt.busy && rt.loopFence == rt.fence)
	rt.fence++
	if !live {
		rt.mu.Unlock()
		return api.StopResult{TaskID: t.ID, Result: "not_running"}, nil
	}
	run := rt.run
	sessions := []string{}
	if run != nil {
		sessions = append(sessions, run.sessionID)
		// Out of memory first, so its token is refused from this moment,
		// and nothing its agent says from now on is recorded.
		run.stopped.Store(true)
		ch.runs.releaseRunLocked(run)
	}
	c, err := ch.k.tx(ctx, func(tx *store.Tx, c *changes) error {
		now := time.Now().UTC()
		if err := tx.SetTaskHalted(ctx, t.ID, true, now); err != nil {
			return err
		}
		cur, err := tx.GetTask(ctx, t.ID)
		if err != nil {
			return err
		}
		if s := core.Status(cur.Status); s == core.StatusInProgress || s == core.StatusTodo {
			if err := tx.SetTaskStatus(ctx, t.ID, string(core.StatusReview), now); err != nil {
				return err
			}
		}
		if run != nil {
			st := string(core.SessionCancelled)
			if err := tx.UpdateSession(ctx, run.sessionID, store.SessionUpdate{State: &st, Error: &why}, now); err != nil {
				return err
			}
			if err := tx.RevokeSessionTokens(ctx, run.sessionID, now); err != nil {
				return err
			}
			c.session(run.sessionID)
		}
		if err := ch.questions.staleQuestionTx(ctx, tx, t.ID, "the task was stopped", c); err != nil {
			return err
		}
		m, err := tx.InsertMessage(ctx, store.Message{TaskID: t.ID, Kind: string(core.MsgStatus), Author: actor.String(),
			Text: why, Meta: metaJSON(map[string]any{"sessions": sessions}), CreatedAt: now, UpdatedAt: now})
		if err != nil {
			return err
		}
		c.addMessage(m)
		c.touch(t.ID)
		return nil
	})
	if run != nil {
		ch.runs.terminate(run)
	}
	rt.mu.Unlock()
	if err != nil {
		// The fence moved and the run is gone: nothing runs on; what could
		// not be recorded is the stop's trace.
		ch.k.log.Error("record stop", "task", t.ID, "err", err)
		ch.k.refreshQuiet(t.ID)
		return api.StopResult{}, mapStoreErr(err, "stop of "+t.ID)
	}
	ch.k.announce(c)
	return api.StopResult{TaskID: t.ID, Result: "stopped", Sessions: sessions}, nil
}

// halt bumps the task's stop fence and ends its live run, if any, for the
// transitions that end work without a stop (archive, done, cancelled). A
// run finishing the turn in which it handed the task on ends by itself.
func (ch *Chain) halt(taskID, why string) {
	rt := ch.runs.runtime(taskID)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.fence++
	if run := rt.run; run != nil {
		if rt.turn != nil && rt.turn.run == run && rt.turn.handedOff {
			return
		}
		ch.runs.endRunLocked(run, core.SessionCancelled, why)
	}
}
