package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/store"
)

// Recover runs once at daemon start: every process an earlier daemon of
// this home started for a session and left running is ended, whatever the
// session's recorded state (sweepOrphans); sessions the previous daemon
// left live are marked interrupted, the
// prompt of any turn they cut short goes back to the front of the queue,
// and user questions whose waiting call died now wait for the next turn.
// Then every task with a cut prompt queued again (by this recovery, an
// earlier one a crash cut short, or a clean shutdown) resumes its agent's
// session and gets it delivered, unless NoResume leaves them for the next
// message or start (ADR 0026).
func (rs *Runs) Recover(ctx context.Context) error {
	swept, err := rs.sweepOrphans(ctx)
	if err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	if err := rs.hosts.loadHostFaults(ctx); err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	live, err := rs.k.db.LiveSessions(ctx)
	if err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	// No agent's permission request outlives its daemon: their questions
	// can no longer be answered, and a prompt they cut is delivered again.
	if pending, err := rs.k.db.PendingQuestions(ctx); err == nil {
		for _, m := range pending {
			if q, err := parseQuestion(m); err == nil && q.Kind == core.QuestionPermission {
				rs.questions.stalePermission(ctx, m.TaskID, "", "the kandev daemon exited while the agent's request waited")
			}
		}
	}
	for i, s := range live {
		killed := swept[s.ID] > 0
		why := fmt.Sprintf("exited while this session was %s", s.State)
		msg := core.SessionInterruptedPrefix + why
		if killed {
			msg += fmt.Sprintf("; its leftover processes (agent pid %d) were killed", s.PID)
		}
		// The requeue, the session's end and the note are one
		// transaction: a crash in between must not leave the session
		// live with its prompt queued, or the next start queues it again.
		now := time.Now().UTC()
		err := rs.k.commit(ctx, func(tx *store.Tx, c *changes) error {
			if err := rs.turns.requeueOpenPrompt(ctx, tx.Queries, s.TaskID, s.ID); err != nil {
				return err
			}
			if rs.k.opts.DuringRecovery != nil {
				rs.k.opts.DuringRecovery(i)
			}
			if err := tx.UpdateSession(ctx, s.ID, interruptedEnd(why), now); err != nil {
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
	pending, err := rs.k.db.PendingQuestions(ctx)
	if err != nil {
		return fmt.Errorf("recover questions: %w", err)
	}
	for _, m := range pending {
		if q, err := parseQuestion(m); err == nil && q.Kind == core.QuestionUser && q.Delivery == "waiting_call" {
			rs.questions.markNextTurn(m.Seq)
		}
	}
	if err := rs.chain.sweep(ctx); err != nil {
		return err
	}
	return rs.resumeInterrupted(ctx)
}

// resumeInterrupted kicks the turn loop of every task with a redelivery
// queued, after the sweep: a task the sweep escalated or a stop holds is
// skipped by the loop as it would be for any input.
func (rs *Runs) resumeInterrupted(ctx context.Context) error {
	ids, err := rs.k.db.RedeliveryQueues(ctx)
	if err != nil {
		return fmt.Errorf("resume interrupted runs: %w", err)
	}
	var resumed []api.ResumedRun
	for _, id := range ids {
		if rs.k.opts.NoResume {
			rs.k.log.Info("interrupted run left for an explicit start (--no-resume)", "task", id)
			continue
		}
		rs.k.log.Info("resuming an interrupted run", "task", id)
		r := api.ResumedRun{TaskID: id}
		if t, ok := rs.k.cached(id); ok {
			r.Title = t.Title
		}
		resumed = append(resumed, r)
		rs.turns.kick(id)
	}
	rs.resumedMu.Lock()
	rs.resumed = resumed
	rs.resumedMu.Unlock()
	return nil
}

// Resumed lists the interrupted runs this daemon resumed when it started
// (Recover): Version reports them, so the command that started the daemon
// and daemon status can say which runs went on by themselves.
func (rs *Runs) Resumed() []api.ResumedRun {
	rs.resumedMu.Lock()
	defer rs.resumedMu.Unlock()
	return append([]api.ResumedRun(nil), rs.resumed...)
}

// sweepOrphans ends, before anything of this daemon runs, every process an
// earlier daemon of this home left behind: each process whose session
// marker names this home (agent.HomeEnv), and each carrying the id of a
// session whose teardown was never recorded (started before markers named
// their home). Agents that do not exit when their input closes (Codex,
// Gemini CLI) would otherwise outlive a daemon killed after a run's end
// was recorded and before its teardown was over. Every session is then
// recorded torn down, and one whose state said it had ended gets a note.
// It returns how many processes of each session it killed.
//
// Processes are found in one pass over /proc, only when some teardown was
// never recorded (after a clean shutdown every one was); this is the one place that
// asks "what of this home's sessions still runs", so another place agents
// run (a container runtime) adds its own search here.
func (rs *Runs) sweepOrphans(ctx context.Context) (map[string]int, error) {
	open, err := rs.k.db.SessionsNotTornDown(ctx)
	if err != nil {
		return nil, err
	}
	if len(open) == 0 {
		// Every teardown finished: nothing of this home's sessions can
		// still run here, and the start need not read /proc (~3 ms for
		// 150 processes); only what lost connections left on hosts may.
		return rs.hosts.sweepHosts(ctx, nil), nil
	}
	mayRun := make(map[string]store.Session, len(open))
	for _, s := range open {
		mayRun[s.ID] = s
	}
	home := agent.HomeID(rs.k.opts.Home.Dir)
	var doomed []agent.Marked
	// Sessions on hosts first, while the ssh that carried each still
	// runs here (hostfaults.go).
	killed := rs.hosts.sweepHosts(ctx, open)
	for _, p := range agent.MarkedProcs() {
		_, recorded := mayRun[p.Session]
		if (home != "" && p.Home == home) || (p.Home == "" && recorded) {
			doomed = append(doomed, p)
			killed[p.Session]++
		}
	}
	agent.KillMarked(doomed, orphanKillWait)
	now := time.Now().UTC()
	for id, n := range killed {
		rs.k.log.Warn("killed processes an earlier daemon left running", "session", id, "processes", n)
		s, ok := mayRun[id]
		if !ok {
			if s, err = rs.k.db.GetSession(ctx, id); err != nil {
				continue
			}
		}
		if !core.SessionState(s.State).Live() {
			rs.k.note(ctx, s.TaskID, s.ID, core.MsgStatus, "kandev",
				fmt.Sprintf("the kandev daemon exited before this session's processes were ended; %d left running were killed at its next start", n),
				map[string]any{"orphans_killed": n})
		}
	}
	// Nothing of this daemon runs yet: every session not recorded torn
	// down is, now.
	if err := rs.k.db.MarkAllTornDown(ctx, now); err != nil {
		return nil, err
	}
	return killed, nil
}

// orphanKillWait bounds the wait for killed orphans to disappear.
const orphanKillWait = 5 * time.Second
