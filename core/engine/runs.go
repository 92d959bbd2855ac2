package engine

// The run lifecycle: one agent process and its session, from launch
// (under the stop fence) to its end, failure, idle end or interruption.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/core/hosts"
	"github.com/kandev/kandev/store"
)

// taskRuntime is the live, in-memory side of one task. mu serialises every
// lifecycle decision for the task; fence is the stop fence: a stop bumps it,
// and a launch or delivery that sees it changed gives up.
type taskRuntime struct {
	id    string
	mu    sync.Mutex
	busy  bool
	run   *liveRun
	turn  *turnState
	fence uint64
	// loopFence is the fence the turn loop last acted under; a loop whose
	// fence is stale is winding down after a stop and will launch nothing.
	loopFence uint64
	// paused ends the turn loop after a delivery could not be written (a
	// full disk); retry is the wait before the next attempt.
	paused bool
	retry  time.Duration
	// permSem lets one permission request at a time ask the operator.
	permSem chan struct{}
}

type turnState struct {
	run         *liveRun
	interrupted bool // cancelled to make way for an interrupt message
	forQuestion bool // ended by the engine after ask_parent_question_kandev
	handedOff   bool // the task changed hands during the turn
}

// liveRun is one agent process and its session row.
type liveRun struct {
	rt        *taskRuntime
	sessionID string
	role      string
	profile   string
	proc      *agent.Run
	set       capability.Set
	rec       *recorder
	prompts   int
	ended     bool
	// stopped: a stop released this run. The recorder reads it without
	// the task's lock: a stopped run's further updates are not recorded.
	stopped atomic.Bool
	// opening: launch is still setting the session up; an exit now is
	// launch's to report (a failed start), not watchExit's.
	opening bool
	// idle ends the run after IdleTimeout without a turn; the next input
	// resumes its agent session.
	idle *time.Timer
	// remote is the launcher of a run on a host (hostfaults.go).
	remote *hosts.Remote
}

var errFenced = errors.New("stopped while starting")

// runFailedError: the role's agent was spawned (or tried to be) and its
// run failed before it could take a turn. Like a failed turn it is a
// stall (rule 4); the session's failure and the stall-check outbox were
// written together.
type runFailedError struct{ role, reason string }

func (r *runFailedError) Error() string { return r.reason }

// unservedError: the profile cannot start at all (missing, command not
// found). The queue waits; it is not a failed run.
// unservedError: the task's agent cannot start now, for cause (shown as
// reason); the task waits, and starts by itself once it can.
type unservedError struct {
	cause  core.WaitCause
	reason string
}

func (u *unservedError) Error() string { return u.reason }

// writeError: the store could not record the start of a run (a full
// disk). The task retries by itself; see deliveryFailed.
type writeError struct{ err error }

func (w *writeError) Error() string { return w.err.Error() }

func (rs *Runs) runtime(id string) *taskRuntime {
	return rs.k.live.runtime(id)
}

// launch spawns the task's agent and opens (or resumes) its session: it
// plans the run (planLaunch), prepares its worktree or host outside the
// task's lock, starts the process under the stop fence (startRun) and
// opens its session (openRun).
func (rs *Runs) launch(rt *taskRuntime, fence uint64, t core.Task) (*liveRun, error) {
	ctx := rs.k.baseCtx
	// A slot placement reserved is the run's once registered, free again
	// if the launch ends without one.
	defer rs.hosts.unreserveHost(t.ID)
	p, err := rs.planLaunch(ctx, rt, fence, &t)
	if err != nil {
		return nil, err
	}
	rs.prepareLaunch(ctx, t, &p)
	run, err := rs.startRun(ctx, rt, fence, t, p)
	if err != nil {
		return nil, err
	}
	return rs.openRun(ctx, rt, t, run, p)
}

// replayDone ends the replay filter of a resumed session, right before
// kandev sends it its first prompt: everything the agent streamed until
// then, as far as it reached kandev, is handled (and dropped) first.
func (rs *Runs) replayDone(ctx context.Context, run *liveRun) {
	if !run.rec.isReplaying() {
		return
	}
	run.proc.Settle(ctx)
	run.rec.setReplaying(false)
}

// startTimeout is the profile's own start bound when it has one (OpenCode
// may take a minute to start on a busy machine), else the daemon's.
func startTimeout(p core.Profile, daemonDefault time.Duration) time.Duration {
	if d, err := time.ParseDuration(p.StartTimeout); err == nil && d > 0 {
		return d
	}
	return daemonDefault
}

// watchExit notices an agent that exits between turns, so the next
// message relaunches it instead of being handed to a dead process.
func (rs *Runs) watchExit(run *liveRun) {
	defer rs.procWG.Done()
	<-run.proc.Exited()
	rt := run.rt
	rt.mu.Lock()
	if run.ended || run.opening || (rt.turn != nil && rt.turn.run == run) {
		// Ended on purpose, or launch or a running turn will report the exit.
		rt.mu.Unlock()
		return
	}
	reason := "agent exited between turns: " + run.proc.ExitReason()
	state := core.SessionFailed
	if run.proc.ExitedCleanly() {
		state = core.SessionCompleted
	}
	rs.endRunLocked(run, state, reason)
	rt.mu.Unlock()
	rs.k.note(context.Background(), rt.id, run.sessionID, core.MsgStatus, "kandev", reason+"; the next message starts it again", nil)
	rs.k.refreshQuiet(rt.id)
}

// armIdle schedules the end of a run that stays without a turn for
// IdleTimeout: an agent held by a question or by subtasks need not keep a
// process (and its memory) up for hours. rt.mu must be held.
func (rs *Runs) armIdle(run *liveRun) {
	if rs.k.opts.IdleTimeout <= 0 || run.ended {
		return
	}
	if run.idle != nil {
		run.idle.Stop()
	}
	var timer *time.Timer
	timer = time.AfterFunc(rs.k.opts.IdleTimeout, func() {
		rt := run.rt
		rt.mu.Lock()
		if run.ended || run.idle != timer || rt.turn != nil || rs.k.isClosing() {
			rt.mu.Unlock()
			return
		}
		rs.endRunLocked(run, core.SessionCompleted, fmt.Sprintf("idle for %s; the next message resumes it", rs.k.opts.IdleTimeout))
		rt.mu.Unlock()
		rs.k.refreshQuiet(rt.id)
	})
	run.idle = timer
}

// endRunLocked ends a live run: session state and reason recorded, token
// revoked, process group torn down in the background. rt.mu must be held.
func (rs *Runs) endRunLocked(run *liveRun, state core.SessionState, reason string) {
	rs.closeRunLocked(run, state, reason, false)
}

// failRunLocked ends a run that failed, writing the stall-check outbox with
// the session's failure so a crash before the check leaves it for the
// startup sweep. The caller runs afterTurn once rt.mu is released.
func (rs *Runs) failRunLocked(run *liveRun, reason string) {
	rs.closeRunLocked(run, core.SessionFailed, reason, true)
}

// failRun ends a misbehaving run (it wrote garbage) as failed: a stall of
// its role, like any failed run (rule 4).
func (rs *Runs) failRun(run *liveRun, reason string) {
	rt := run.rt
	rt.mu.Lock()
	if run.ended {
		rt.mu.Unlock()
		return
	}
	rs.failRunLocked(run, reason)
	rt.mu.Unlock()
	rs.k.note(context.Background(), rt.id, run.sessionID, core.MsgStatus, "kandev", "session failed: "+reason, nil)
	rs.turns.afterTurn(rt.id, turnOutcome{role: run.role, failed: true, err: reason})
}

func (rs *Runs) closeRunLocked(run *liveRun, state core.SessionState, reason string, check bool) {
	if run.ended {
		return
	}
	rs.releaseRunLocked(run)
	rs.finishSessionChecked(run.rt.id, run.sessionID, state, reason, check)
	rs.terminate(run)
}

// releaseRunLocked takes a run out of the engine's memory: no turn goes to
// it and its token is no longer live. rt.mu must be held.
func (rs *Runs) releaseRunLocked(run *liveRun) {
	run.ended = true
	if run.idle != nil {
		run.idle.Stop()
		run.idle = nil
	}
	if run.rt.run == run {
		run.rt.run = nil
	}
	rs.k.live.release(run.sessionID)
	rs.hosts.releasedOnHost(run.rt.id)
}

// terminate tears a released run's process down in the background, and
// records when nothing of it is left: until then a restart must assume its
// processes still run, whatever the session's state says.
func (rs *Runs) terminate(run *liveRun) {
	if run.proc != nil {
		rs.procWG.Add(1)
		go func() {
			defer rs.procWG.Done()
			if rs.k.opts.BeforeTeardown != nil {
				rs.k.opts.BeforeTeardown(run.sessionID)
			}
			run.proc.Terminate(rs.k.opts.Grace)
			rs.tornDown(run.sessionID)
		}()
	}
}

// tornDown records that no process of the session is left.
func (rs *Runs) tornDown(sessionID string) {
	if err := rs.k.db.MarkTornDown(context.Background(), sessionID, time.Now().UTC()); err != nil {
		rs.k.log.Warn("record teardown", "session", sessionID, "err", err)
	}
}

// finishSessionChecked records a session's terminal state and revokes its
// token; with check it also sets the task's stall-check outbox in the same
// transaction.
func (rs *Runs) finishSessionChecked(taskID, sessionID string, state core.SessionState, reason string, check bool) {
	st := string(state)
	rs.finishSessionUpdate(taskID, sessionID, store.SessionUpdate{State: &st, Error: &reason}, check)
}

// finishSessionUpdate is finishSessionChecked with the session's end
// given as an update (an interrupted one carries its flag).
func (rs *Runs) finishSessionUpdate(taskID, sessionID string, u store.SessionUpdate, check bool) {
	ctx := context.Background()
	now := time.Now().UTC()
	c, err := rs.k.tx(ctx, func(tx *store.Tx, c *changes) error {
		c.session(sessionID)
		if err := tx.UpdateSession(ctx, sessionID, u, now); err != nil {
			return err
		}
		if check {
			if err := tx.SetNeedsCheck(ctx, taskID, true); err != nil {
				return err
			}
		}
		return tx.RevokeSessionTokens(ctx, sessionID, now)
	})
	if err != nil {
		rs.k.log.Error("finish session", "session", sessionID, "err", err)
		// Show the session as it stands all the same.
		c.session(sessionID)
	}
	// Only the session is announced here: the caller holds the task's
	// lock and refreshes the task once it let go.
	rs.k.announce(c)
}

// interruptRun ends a run because the daemon is going away. The prompt of a
// turn it cut short is queued again at the front, so nothing is lost; the
// requeue and the session's end are one transaction, so a crash between
// them cannot make the next start queue the prompt a second time.
func (rs *Runs) interruptRun(run *liveRun, why string) {
	reason := core.SessionInterruptedPrefix + why
	rt := run.rt
	rt.mu.Lock()
	inTurn := rt.turn != nil && rt.turn.run == run
	// tx then announce: the task is refreshed once its lock is released.
	// endRunLocked below writes the session's end again in a transaction
	// of its own (the same state and reason, the token revoked already),
	// as it does for every run that ends.
	// The interrupted flag is written here, turn or not: endRunLocked's
	// write leaves it set.
	var c changes
	if !run.ended {
		ctx := context.Background()
		now := time.Now().UTC()
		var err error
		c, err = rs.k.tx(ctx, func(tx *store.Tx, _ *changes) error {
			if inTurn {
				if err := rs.turns.requeueOpenPrompt(ctx, tx.Queries, rt.id, run.sessionID); err != nil {
					return err
				}
			}
			if err := tx.UpdateSession(ctx, run.sessionID, interruptedEnd(why), now); err != nil {
				return err
			}
			return tx.RevokeSessionTokens(ctx, run.sessionID, now)
		})
		if err != nil {
			rs.k.log.Error("requeue interrupted prompt", "task", rt.id, "err", err)
		}
	}
	rs.endRunLocked(run, core.SessionCancelled, reason)
	rt.mu.Unlock()
	c.touch(rt.id)
	rs.k.announce(c)
}

// capabilitySet derives a session's tools from persisted task fields.
func (rs *Runs) capabilitySet(t core.Task) capability.Set {
	surface, err := capability.ParseSurface(t.Surface)
	if err != nil || surface == capability.External {
		surface = capability.KanbanTask
	}
	return capability.Resolve(capability.Case{
		Surface: surface, Autopilot: t.Autopilot, HasParent: t.ParentID != "",
		TitlePending: t.TitlePending, Host: rs.workspaces.providerHost(t),
	})
}

func newToken() (token, hash string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("mint token: %w", err)
	}
	token = base64.RawURLEncoding.EncodeToString(b)
	return token, hashToken(token), nil
}

func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func hostWord(h string) string {
	if h == "" {
		return "on this machine"
	}
	return "on host " + h
}

func hostOrLocal(h string) string {
	if h == "" {
		return hostLocal
	}
	return h
}

// Runs is the runs area (runs.go, launch.go, sandbox.go, containers.go,
// recover.go): it launches an agent run for a task (its profile, host,
// sandbox and worktree), watches it, ends it, tears its processes down and
// records its session; at start it recovers the runs a daemon exit cut
// short. It owns no lock of its own: a run's state is the task's rt.mu
// (live.go) and the live runs' table.
type Runs struct {
	k *kernel
	// procWG counts process teardowns and timers, which Close waits for.
	procWG *sync.WaitGroup
	// flusher writes the recorders' streamed output (ADR 0050).
	flusher *streamFlusher

	spend      *Spend      // the spend a run reports (usage.go)
	chain      *Chain      // a failed run's stall check
	hosts      *Hosts      // a run's place, its host's faults
	questions  *Questions  // the questions a run's end makes stale
	roles      *Roles      // a task's profile
	turns      *Turns      // the turn loop a run's end wakes
	workspaces *Workspaces // a run's worktree

	// resumed are the runs Recover resumed at the daemon's start.
	resumedMu sync.Mutex
	resumed   []api.ResumedRun
}
