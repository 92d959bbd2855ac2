package engine

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/core/prompt"
	"github.com/kandev/kandev/store"
)

// Queue priorities: front-of-line items (interrupts, redeliveries) go first.
const (
	priorityFront  = 0
	priorityNormal = 1
)

// Queue item kinds. Each kind renders its own prompt at delivery.
const (
	itemMessage   = "message"   // a message from the operator or another task
	itemKickoff   = "kickoff"   // start with nothing to say: work on the task
	itemRedeliver = "redeliver" // a prompt whose turn a daemon exit cut short
	itemQuestion  = "question"  // a child's question, delivered to its parent
	itemAnswer    = "answer"    // the answer to this task's own question
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
	// opening: launch is still setting the session up; an exit now is
	// launch's to report (a failed start), not watchExit's.
	opening bool
	// idle ends the run after IdleTimeout without a turn; the next input
	// resumes its agent session.
	idle *time.Timer
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
type unservedError struct{ reason string }

func (u *unservedError) Error() string { return u.reason }

// writeError: the store could not record the start of a run (a full
// disk). The task retries by itself; see deliveryFailed.
type writeError struct{ err error }

func (w *writeError) Error() string { return w.err.Error() }

func (e *Engine) runtime(id string) *taskRuntime {
	e.rtMu.Lock()
	defer e.rtMu.Unlock()
	rt := e.runtimes[id]
	if rt == nil {
		rt = &taskRuntime{id: id, permSem: make(chan struct{}, 1)}
		e.runtimes[id] = rt
	}
	return rt
}

// kick starts the task's turn loop unless one is running. It never blocks.
func (e *Engine) kick(id string) {
	rt := e.runtime(id)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.busy {
		return
	}
	e.rtMu.Lock()
	if e.closing {
		e.rtMu.Unlock()
		return
	}
	e.wg.Add(1)
	e.rtMu.Unlock()
	rt.busy = true
	rt.loopFence = rt.fence
	go e.turnLoop(rt)
}

// turnLoop delivers queued items one turn at a time until nothing is
// deliverable.
func (e *Engine) turnLoop(rt *taskRuntime) {
	defer e.wg.Done()
	for {
		item, run, fence, t, ok := e.nextTurn(rt)
		if !ok {
			return
		}
		e.runTurn(rt, run, item, fence, t)
	}
}

// held says why a task's queue may not be delivered now, or "".
func (e *Engine) held(t core.Task) string {
	switch {
	case t.Archived:
		return "archived"
	case t.Halted:
		return "stopped"
	case t.Status.Terminal():
		// A finished task's leftover queue waits for its reopen (ADR 0022).
		return string(t.Status)
	case t.PendingQuestion != nil:
		return "waiting on question " + t.PendingQuestion.ID
	case t.Stuck():
		// A run that failed again would only fail again: explicit input
		// (the operator's, or its parent's) clears the mark first.
		return "stuck: nobody to escalate to"
	case t.Assignee == nil || !t.Assignee.IsRole():
		return "waiting on someone else"
	}
	return ""
}

// nextTurn picks the next item and makes sure a run exists to take it.
// When it returns false the loop is over and rt.busy is cleared.
func (e *Engine) nextTurn(rt *taskRuntime) (store.QueueItem, *liveRun, uint64, core.Task, bool) {
	ctx := e.baseCtx
	rt.mu.Lock()
	stop := func() (store.QueueItem, *liveRun, uint64, core.Task, bool) {
		rt.busy = false
		rt.mu.Unlock()
		return store.QueueItem{}, nil, 0, core.Task{}, false
	}
	if e.isClosing() || rt.paused {
		rt.paused = false
		return stop()
	}
	// The store, not the cache, decides: every change commits before the
	// cache is refreshed, and a stop, a handoff or a question committed a
	// moment ago must hold this turn.
	t, err := e.storedTask(ctx, rt.id)
	if err != nil || e.held(t) != "" {
		return stop()
	}
	items, err := e.db.Queue(ctx, rt.id)
	if err != nil {
		e.log.Error("read queue", "task", rt.id, "err", err)
		return stop()
	}
	if len(items) == 0 {
		return stop()
	}
	item, fence, run := items[0], rt.fence, rt.run
	rt.loopFence = fence
	if run != nil && run.role != t.Assignee.Name {
		// The task changed hands: the old role's run ends, its session kept.
		e.endRunLocked(run, core.SessionCompleted, "the task was handed to role "+t.Assignee.Name)
		run = nil
	}
	rt.mu.Unlock()

	if run == nil {
		run, err = e.launch(rt, fence, t)
		if err != nil {
			rt.mu.Lock()
			rt.busy = false
			rt.mu.Unlock()
			var un *unservedError
			var rf *runFailedError
			switch {
			case errors.As(err, &un):
				e.setUnserved(rt.id, un.reason)
			case errors.As(err, &rf):
				// The item stays queued for whoever takes the task next; the
				// loop is over, so a failing agent is not launched again until
				// new input, an escalation or a handoff kicks the task.
				if e.opts.AfterTurnEnd != nil {
					e.opts.AfterTurnEnd(rt.id)
				}
				e.afterTurn(rt.id, turnOutcome{role: rf.role, failed: true, err: rf.reason})
			}
			var we *writeError
			if errors.As(err, &we) {
				rt.mu.Lock()
				e.deliveryFailed(rt, we.err)
				rt.paused = false // this loop is already ending
				rt.mu.Unlock()
				e.refreshQuiet(rt.id)
			}
			return store.QueueItem{}, nil, 0, core.Task{}, false
		}
	}
	return item, run, fence, t, true
}

// launch spawns the task's agent and opens (or resumes) its session.
func (e *Engine) launch(rt *taskRuntime, fence uint64, t core.Task) (*liveRun, error) {
	ctx := e.baseCtx
	if t.Assignee == nil || !t.Assignee.IsRole() {
		return nil, errFenced
	}
	role, err := e.roleOf(ctx, t.Assignee.Name)
	if err != nil {
		return nil, &unservedError{reason: fmt.Sprintf("role %s cannot start: %v", t.Assignee.Name, err)}
	}
	prof, err := e.profile(ctx, role.Profile)
	if err != nil {
		return nil, &unservedError{reason: fmt.Sprintf("profile %s cannot start: %s", role.Profile, err.Error())}
	}
	command := prof.Command
	if command == core.SelfCommand {
		command = e.opts.SelfExe
	} else if path, err := exec.LookPath(command); err != nil && !errors.Is(err, fs.ErrPermission) {
		// Missing is not a failure: the task waits and starts once the CLI
		// is installed. A file that is there but cannot run is: spawning it
		// fails below and the run escalates.
		return nil, &unservedError{reason: fmt.Sprintf("profile %s cannot start: command %s not found in PATH", prof.Name, prof.Command)}
	} else if err == nil {
		command = path
	}
	e.clearUnserved(rt.id)
	var resumeID string
	if prev, err := e.db.LatestAgentSession(ctx, t.ID, role.Name); err == nil {
		resumeID = prev.AgentSessionID
	}
	set := e.capabilitySet(t)
	token, hash, err := newToken()
	if err != nil {
		return nil, err
	}
	sessionID := "s" + core.NewID()
	// The worktree's .kandev/setup runs before its first agent, outside
	// the runtime lock (it may take minutes; a stop meanwhile fences the
	// launch below). Its failure is this run's failure.
	setupOut, setupErr := e.setupWorktree(ctx, t)

	rt.mu.Lock()
	if rt.fence != fence || e.isClosing() {
		rt.mu.Unlock()
		return nil, errFenced
	}
	now := time.Now().UTC()
	err = e.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.InsertSession(ctx, store.Session{ID: sessionID, TaskID: t.ID, Role: role.Name, Profile: prof.Name,
			State: string(core.SessionStarting), CreatedAt: now, UpdatedAt: now}); err != nil {
			return err
		}
		return tx.InsertToken(ctx, store.Token{Hash: hash, SessionID: sessionID, TaskID: t.ID, CreatedAt: now})
	})
	if err != nil {
		rt.mu.Unlock()
		e.log.Error("record session", "task", t.ID, "err", err)
		return nil, &writeError{err: err}
	}
	if setupErr != nil {
		reason := "worktree setup failed: " + setupErr.Error()
		e.finishSessionChecked(t.ID, sessionID, core.SessionFailed, reason, true)
		rt.mu.Unlock()
		e.note(ctx, t.ID, sessionID, core.MsgStatus, "kandev", reason, nil)
		return nil, &runFailedError{role: role.Name, reason: reason}
	}
	if setupOut != "" {
		e.note(ctx, t.ID, sessionID, core.MsgStatus, "kandev", "worktree setup:\n"+setupOut, nil)
	}
	run := &liveRun{rt: rt, sessionID: sessionID, role: role.Name, profile: prof.Name, set: set, opening: true}
	run.rec = newRecorder(e, t.ID, sessionID, run)
	var env []string
	if prof.Command == core.SelfCommand && os.Getenv("KANDEV_MOCK_STATE_DIR") == "" {
		// The mock agent no longer sees KANDEV_HOME; its sessions' state
		// still belongs to this home, not to a directory homes share.
		env = append(env, "KANDEV_MOCK_STATE_DIR="+filepath.Join(e.opts.Home.Dir, "mock-agent"))
	}
	env = append(append(append(env, prof.Env...), clearedAgentEnv...),
		"KANDEV_TASK_ID="+t.ID)
	spec := agent.Spec{
		Command: command, Args: prof.Args, Env: env, Dir: t.CWD, SessionID: sessionID,
		LogPath: e.opts.Home.SessionLog(sessionID), ResumeID: resumeID,
		StartTimeout: startTimeout(prof, e.opts.StartTimeout), Logger: e.log.With("session", sessionID),
		MCPServers: []acp.McpServer{{Stdio: &acp.McpServerStdio{
			Name: "kandev", Command: e.opts.SelfExe, Args: []string{"mcp"},
			Env: []acp.EnvVariable{{Name: "KANDEV_SOCKET", Value: e.opts.Socket}, {Name: "KANDEV_TOKEN", Value: token}},
		}}},
	}
	proc, err := agent.Start(spec, run.rec)
	if err != nil {
		reason := "agent failed to start: " + err.Error()
		e.finishSessionChecked(t.ID, sessionID, core.SessionFailed, reason, true)
		rt.mu.Unlock()
		e.note(ctx, t.ID, sessionID, core.MsgStatus, "kandev", reason, nil)
		return nil, &runFailedError{role: role.Name, reason: reason}
	}
	run.proc = proc
	// Register under the engine lock with the closing check, so a shutdown
	// that already took its list of runs cannot miss this one.
	e.rtMu.Lock()
	if e.closing {
		e.rtMu.Unlock()
		e.finishSession(sessionID, core.SessionCancelled, core.SessionInterruptedPrefix+"shut down")
		rt.mu.Unlock()
		proc.Terminate(e.opts.Grace)
		return nil, errFenced
	}
	e.sessions[sessionID] = run
	e.tokens[hash] = core.Actor{Kind: core.ActorAgent, TaskID: t.ID, SessionID: sessionID}
	e.rtMu.Unlock()
	rt.run = run
	pid := proc.PID()
	e.updateSession(sessionID, store.SessionUpdate{PID: &pid})
	e.procWG.Add(1)
	go e.watchExit(run)
	rt.mu.Unlock()
	e.refreshQuiet(t.ID)

	// What the agent streams while its session opens is a session/load
	// replay of history kandev already recorded: none of it is new.
	run.rec.setReplaying(true)
	openErr := proc.Open(ctx)
	run.rec.setReplaying(false)
	if openErr == nil && proc.GarbageLine() != "" {
		// Non-ACP output before the answers: the session may be up, but the
		// agent is not speaking the protocol (see also recorder.Garbage).
		openErr = fmt.Errorf("agent wrote output that is not ACP: %q", truncateRunes(proc.GarbageLine(), 200))
	}

	rt.mu.Lock()
	defer rt.mu.Unlock()
	run.opening = false
	if rt.run != run {
		return nil, errFenced // a stop (or shutdown) took it meanwhile
	}
	if openErr != nil {
		reason := "agent failed to start: " + openErr.Error()
		e.failRunLocked(run, reason)
		e.note(ctx, t.ID, sessionID, core.MsgStatus, "kandev", reason, nil)
		return nil, &runFailedError{role: role.Name, reason: reason}
	}
	agentSID := proc.SessionID()
	state := string(core.SessionWaitingForInput)
	e.updateSession(sessionID, store.SessionUpdate{AgentSessionID: &agentSID, State: &state})
	for _, f := range proc.Fallbacks() {
		e.note(ctx, t.ID, sessionID, core.MsgStatus, "kandev", "resume: "+f, map[string]any{"resume_fallback": true})
	}
	how := "started a new agent session"
	if proc.Resumed() {
		how = "resumed agent session " + agentSID
	} else if resumeID != "" {
		how = "could not resume agent session " + resumeID + "; started a new one"
	}
	e.note(ctx, t.ID, sessionID, core.MsgStatus, "kandev", fmt.Sprintf("role %s (profile %s, pid %d): %s", role.Name, prof.Name, pid, how),
		map[string]any{"resumed": proc.Resumed(), "agent_session_id": agentSID})
	return run, nil
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
func (e *Engine) watchExit(run *liveRun) {
	defer e.procWG.Done()
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
	e.endRunLocked(run, state, reason)
	rt.mu.Unlock()
	e.note(context.Background(), rt.id, run.sessionID, core.MsgStatus, "kandev", reason+"; the next message starts it again", nil)
	e.refreshQuiet(rt.id)
}

// runTurn delivers one item as a turn and records how it ended.
func (e *Engine) runTurn(rt *taskRuntime, run *liveRun, item store.QueueItem, fence uint64, t core.Task) {
	ctx := e.baseCtx
	rt.mu.Lock()
	if rt.fence != fence || rt.run != run {
		rt.mu.Unlock()
		return
	}
	now := time.Now().UTC()
	body := e.renderItem(ctx, t, item)
	var added store.Message
	err := e.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.DeleteQueueItem(ctx, item.ID); err != nil {
			return err
		}
		meta, _ := json.Marshal(map[string]any{"delivery": item.Kind, "queue_id": item.ID, "rendered": body})
		var err error
		added, err = tx.InsertMessage(ctx, store.Message{TaskID: t.ID, SessionID: run.sessionID, Kind: string(core.MsgPrompt),
			Author: item.Sender, Text: item.Text, Meta: mergeMeta(string(meta), item.Meta), CreatedAt: now, UpdatedAt: now})
		if err != nil {
			return err
		}
		running := string(core.SessionRunning)
		if err := tx.UpdateSession(ctx, run.sessionID, store.SessionUpdate{State: &running, AddTurn: true}, now); err != nil {
			return err
		}
		if core.CheckTransition(t.Status, core.StatusInProgress) == nil && t.Status != core.StatusInProgress {
			return tx.SetTaskStatus(ctx, t.ID, string(core.StatusInProgress), now)
		}
		return nil
	})
	if err != nil {
		e.deliveryFailed(rt, err)
		rt.mu.Unlock()
		e.log.Error("deliver queued message", "task", t.ID, "err", err)
		e.refreshQuiet(t.ID)
		return
	}
	e.deliveryDone(rt)
	rt.turn = &turnState{run: run}
	if run.idle != nil {
		run.idle.Stop()
		run.idle = nil
	}
	run.rec.resetTurn()
	rt.mu.Unlock()
	e.publishMessage(core.EventMessageAdded, added)
	e.publishSession(run.sessionID)
	e.refreshQuiet(t.ID)

	text := body
	if run.prompts == 0 {
		if pre, err := e.preamble(t, run.set); err == nil {
			text = pre + "\n" + body
		} else {
			e.log.Error("render preamble", "task", t.ID, "err", err)
		}
	}
	run.prompts++
	stopReason, promptErr := run.proc.Prompt(ctx, text)

	rt.mu.Lock()
	turn := rt.turn
	rt.turn = nil
	// Under the task lock: an answer arriving now goes to the queue.
	e.dropWaitingCall(ctx, t.ID, "the turn that asked ended")
	// A permission request the agent left open past its turn's end can no
	// longer be answered: no question stays pending on a finished turn.
	e.stalePermission(ctx, t.ID, run.sessionID, "the turn ended before an answer")
	if rt.run != run {
		// Stopped, failed or shut down while the turn ran; whoever ended
		// the run recorded why.
		rt.mu.Unlock()
		e.endTurn(t.ID, run.sessionID, "cancelled", "", nil, false)
		return
	}
	if promptErr != nil {
		reason := "turn failed: " + promptErr.Error()
		e.endTurn(t.ID, run.sessionID, "error", promptErr.Error(), nil, true)
		e.endRunLocked(run, core.SessionFailed, reason)
		rt.mu.Unlock()
		e.afterTurn(t.ID, turnOutcome{role: run.role, failed: true, err: promptErr.Error()})
		return
	}
	reason := string(stopReason)
	if turn != nil && turn.forQuestion && stopReason == acp.StopReasonCancelled {
		reason = "ended_for_question"
	}
	waiting := string(core.SessionWaitingForInput)
	interrupted := turn != nil && turn.interrupted
	e.endTurn(t.ID, run.sessionID, reason, "", &waiting, !interrupted)
	// Every handoff goes through releaseRun, which marks the running turn.
	if turn != nil && turn.handedOff {
		e.endRunLocked(run, core.SessionCompleted, "the task was handed on")
	} else {
		e.armIdle(run)
	}
	rt.mu.Unlock()
	if e.opts.AfterTurnEnd != nil {
		e.opts.AfterTurnEnd(t.ID)
	}
	e.afterTurn(t.ID, turnOutcome{role: run.role, interrupted: interrupted, sessionID: run.sessionID})
}

// Bounds of the wait between attempts to deliver a message whose delivery
// could not be written.
const (
	retryFirst = 500 * time.Millisecond
	retryMax   = 30 * time.Second
)

// deliveryFailed pauses a task's turn loop after its delivery could not be
// written (a full disk, most likely): rather than spin on the same item,
// the task says why in its waiting field, kept in memory because the
// store may not take it, and tries again after a growing wait. No event
// says the disk has space again, so this one thing is retried on a timer.
// rt.mu must be held.
func (e *Engine) deliveryFailed(rt *taskRuntime, err error) {
	rt.paused = true
	if rt.retry == 0 {
		rt.retry = retryFirst
	} else if rt.retry = 2 * rt.retry; rt.retry > retryMax {
		rt.retry = retryMax
	}
	e.deferMu.Lock()
	e.deferred[rt.id] = fmt.Sprintf("cannot deliver the next message: %v; trying again every %s at most", err, retryMax)
	e.deferMu.Unlock()
	id := rt.id
	time.AfterFunc(rt.retry, func() { e.kick(id) })
}

// deliveryDone clears what deliveryFailed set once a delivery was
// written. rt.mu must be held.
func (e *Engine) deliveryDone(rt *taskRuntime) {
	if rt.retry == 0 {
		return
	}
	rt.retry = 0
	e.deferMu.Lock()
	delete(e.deferred, rt.id)
	e.deferMu.Unlock()
}

// endTurn records a turn's end, the session's new state and, when the
// stall check must follow, the outbox flag, in one transaction: a crash
// between the turn's end and its check leaves the flag for the sweep.
func (e *Engine) endTurn(taskID, sessionID, stopReason, errText string, state *string, check bool) {
	ctx := context.Background()
	text := "turn ended: " + stopReason
	if errText != "" {
		text += ": " + errText
	}
	now := time.Now().UTC()
	var m store.Message
	err := e.db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		m, err = tx.InsertMessage(ctx, store.Message{TaskID: taskID, SessionID: sessionID, Kind: string(core.MsgTurnEnd),
			Author: "kandev", Text: text, Meta: metaJSON(map[string]any{"stop_reason": stopReason, "error": errText}),
			CreatedAt: now, UpdatedAt: now})
		if err != nil {
			return err
		}
		if state != nil {
			if err := tx.UpdateSession(ctx, sessionID, store.SessionUpdate{State: state}, now); err != nil {
				return err
			}
		}
		if check {
			return tx.SetNeedsCheck(ctx, taskID, true)
		}
		return nil
	})
	if err != nil {
		e.log.Error("record turn end", "task", taskID, "err", err)
		return
	}
	e.publishMessage(core.EventMessageAdded, m)
	if state != nil {
		e.publishSession(sessionID)
	}
}

// turnOutcome is what the end of a turn tells the rules that run after it.
type turnOutcome struct {
	role        string
	sessionID   string
	failed      bool
	err         string
	interrupted bool
}

// afterTurn runs the stall check (rule 4) once a turn ended or a run
// failed. A turn's end changes no status by itself: a task held by its
// question, its subtasks or its blockers stays in_progress; only explicit
// transitions (a handoff, a stop, an escalation, a status set) move it.
// The cache is refreshed after the check, so a reader never sees the run
// ended without its escalation.
func (e *Engine) afterTurn(taskID string, out turnOutcome) {
	ctx := context.Background()
	if out.interrupted {
		e.refreshQuiet(taskID)
		return // the interrupt message is next in line
	}
	detail := out.err
	if !out.failed {
		detail = e.lastWords(ctx, taskID, out.sessionID)
	}
	e.stallCheck(ctx, taskID, out.role, out.failed, detail)
	e.refreshQuiet(taskID)
}

// armIdle schedules the end of a run that stays without a turn for
// IdleTimeout: an agent held by a question or by subtasks need not keep a
// process (and its memory) up for hours. rt.mu must be held.
func (e *Engine) armIdle(run *liveRun) {
	if e.opts.IdleTimeout <= 0 || run.ended {
		return
	}
	if run.idle != nil {
		run.idle.Stop()
	}
	var timer *time.Timer
	timer = time.AfterFunc(e.opts.IdleTimeout, func() {
		rt := run.rt
		rt.mu.Lock()
		if run.ended || run.idle != timer || rt.turn != nil || e.isClosing() {
			rt.mu.Unlock()
			return
		}
		e.endRunLocked(run, core.SessionCompleted, fmt.Sprintf("idle for %s; the next message resumes it", e.opts.IdleTimeout))
		rt.mu.Unlock()
		e.refreshQuiet(rt.id)
	})
	run.idle = timer
}

// endRunLocked ends a live run: session state and reason recorded, token
// revoked, process group torn down in the background. rt.mu must be held.
func (e *Engine) endRunLocked(run *liveRun, state core.SessionState, reason string) {
	e.closeRunLocked(run, state, reason, false)
}

// failRunLocked ends a run that failed, writing the stall-check outbox with
// the session's failure so a crash before the check leaves it for the
// startup sweep. The caller runs afterTurn once rt.mu is released.
func (e *Engine) failRunLocked(run *liveRun, reason string) {
	e.closeRunLocked(run, core.SessionFailed, reason, true)
}

func (e *Engine) closeRunLocked(run *liveRun, state core.SessionState, reason string, check bool) {
	if run.ended {
		return
	}
	run.ended = true
	if run.idle != nil {
		run.idle.Stop()
		run.idle = nil
	}
	if run.rt.run == run {
		run.rt.run = nil
	}
	e.rtMu.Lock()
	delete(e.sessions, run.sessionID)
	for h, a := range e.tokens {
		if a.SessionID == run.sessionID {
			delete(e.tokens, h)
		}
	}
	e.rtMu.Unlock()
	e.finishSessionChecked(run.rt.id, run.sessionID, state, reason, check)
	if run.proc != nil {
		e.procWG.Add(1)
		go func() {
			defer e.procWG.Done()
			run.proc.Terminate(e.opts.Grace)
		}()
	}
}

// finishSession records a session's terminal state and revokes its token.
func (e *Engine) finishSession(sessionID string, state core.SessionState, reason string) {
	e.finishSessionChecked("", sessionID, state, reason, false)
}

// finishSessionChecked is finishSession that, with check, also sets the
// task's stall-check outbox in the same transaction.
func (e *Engine) finishSessionChecked(taskID, sessionID string, state core.SessionState, reason string, check bool) {
	ctx := context.Background()
	st := string(state)
	now := time.Now().UTC()
	err := e.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.UpdateSession(ctx, sessionID, store.SessionUpdate{State: &st, Error: &reason}, now); err != nil {
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
		e.log.Error("finish session", "session", sessionID, "err", err)
	}
	e.publishSession(sessionID)
}

// interruptRun ends a run because the daemon is going away. The prompt of a
// turn it cut short is queued again at the front, so nothing is lost; the
// requeue and the session's end are one transaction, so a crash between
// them cannot make the next start queue the prompt a second time.
func (e *Engine) interruptRun(run *liveRun, reason string) {
	rt := run.rt
	rt.mu.Lock()
	inTurn := rt.turn != nil && rt.turn.run == run
	if inTurn && !run.ended {
		ctx := context.Background()
		st := string(core.SessionCancelled)
		now := time.Now().UTC()
		err := e.db.Tx(ctx, func(tx *store.Tx) error {
			if err := e.requeueOpenPrompt(ctx, tx.Queries, rt.id, run.sessionID); err != nil {
				return err
			}
			if err := tx.UpdateSession(ctx, run.sessionID, store.SessionUpdate{State: &st, Error: &reason}, now); err != nil {
				return err
			}
			return tx.RevokeSessionTokens(ctx, run.sessionID, now)
		})
		if err != nil {
			e.log.Error("requeue interrupted prompt", "task", rt.id, "err", err)
		}
	}
	e.endRunLocked(run, core.SessionCancelled, reason)
	rt.mu.Unlock()
	e.refreshQuiet(rt.id)
}

// requeueOpenPrompt puts the last prompt of a session back at the front of
// the queue when its turn never ended. It is idempotent: a redelivery of
// the same prompt (by original_seq) already queued is not queued again.
func (e *Engine) requeueOpenPrompt(ctx context.Context, q store.Queries, taskID, sessionID string) error {
	last, err := q.LastMessageOfKind(ctx, taskID, string(core.MsgPrompt))
	if err != nil || last.SessionID != sessionID {
		return nil
	}
	// A turn cut short while it waited on the operator's answer continues
	// with that answer; repeating its prompt would only ask again. A
	// permission question is not such an answer: its request died with
	// the run, so the prompt is delivered again.
	if pq, err := q.PendingQuestion(ctx, taskID); err == nil && pq.SessionID == sessionID {
		if pm, err := parseQuestion(pq); err != nil || pm.Kind != core.QuestionPermission {
			return nil
		}
	}
	if end, err := q.LastMessageOfKind(ctx, taskID, string(core.MsgTurnEnd)); err == nil && end.Seq > last.Seq {
		return nil
	}
	queued, err := q.Queue(ctx, taskID)
	if err != nil {
		return err
	}
	for _, it := range queued {
		var m struct {
			OriginalSeq int64 `json:"original_seq"`
		}
		if it.Kind == itemRedeliver && json.Unmarshal([]byte(it.Meta), &m) == nil && m.OriginalSeq == last.Seq {
			return nil
		}
	}
	var meta struct {
		Delivery string `json:"delivery"`
	}
	_ = json.Unmarshal([]byte(last.Meta), &meta)
	redeliver, _ := json.Marshal(map[string]any{"original_kind": meta.Delivery, "original_seq": last.Seq})
	_, err = q.Enqueue(ctx, store.QueueItem{TaskID: taskID, Priority: priorityFront, Kind: itemRedeliver,
		Sender: last.Author, Text: last.Text, Meta: string(redeliver), CreatedAt: time.Now().UTC()})
	return err
}

// renderItem turns a queue item into the text the agent reads.
func (e *Engine) renderItem(ctx context.Context, t core.Task, it store.QueueItem) string {
	switch it.Kind {
	case itemKickoff:
		return "[kandev:task] Start work on your task."
	case itemRedeliver:
		return "[kandev:message] kandev restarted before your turn on this message ended; here it is again.\n\n" +
			e.describeSender(it.Sender) + ":\n\n" + it.Text
	case itemHandoff:
		// A sign-off request says how many subtasks are still open (this
		// one included), counted as the turn starts: signing the last one
		// off brings no wake, so the agent decides its own next move here.
		if strings.Contains(it.Meta, `"child_task_id"`) {
			return fmt.Sprintf("%s\nopen_subtasks: %d", it.Text, e.openSubtasks(t.ID))
		}
		return it.Text
	case itemQuestion, itemAnswer, itemStalled, itemWake:
		return it.Text
	default:
		return "[kandev:message] " + e.describeSender(it.Sender) + ":\n\n" + it.Text
	}
}

func (e *Engine) describeSender(sender string) string {
	a := core.ParseActor(sender)
	switch a.Kind {
	case core.ActorPerson:
		if a.Name == core.Operator {
			return "From the operator"
		}
		return "From " + a.Name
	case core.ActorAgent:
		if t, ok := e.cached(a.TaskID); ok {
			return fmt.Sprintf("From task %s (%s)", t.ID, t.Title)
		}
		return "From task " + a.TaskID
	case core.ActorRole:
		return "From role " + a.Name
	default:
		return "From an external agent"
	}
}

// capabilitySet derives a session's tools from persisted task fields.
func (e *Engine) capabilitySet(t core.Task) capability.Set {
	surface, err := capability.ParseSurface(t.Surface)
	if err != nil || surface == capability.External {
		surface = capability.KanbanTask
	}
	return capability.Resolve(capability.Case{
		Surface: surface, Autopilot: t.Autopilot, HasParent: t.ParentID != "",
		TitlePending: t.TitlePending,
	})
}

func (e *Engine) preamble(t core.Task, set capability.Set) (string, error) {
	info := prompt.TaskInfo{ID: t.ID, Title: t.Title, Description: t.Description,
		ParentID: t.ParentID, CWD: t.CWD, Autopilot: t.Autopilot}
	if w := t.Workspace; w != nil && (w.Mode == core.WorkspaceWorktree || w.Mode == core.WorkspaceInherit) {
		info.Workspace, info.Branch = w.Mode, w.Branch
	}
	return prompt.Preamble(info, set)
}

func (e *Engine) updateSession(id string, u store.SessionUpdate) {
	if err := e.db.UpdateSession(context.Background(), id, u, time.Now().UTC()); err != nil {
		e.log.Error("update session", "session", id, "err", err)
	}
	e.publishSession(id)
}

func (e *Engine) publishSession(id string) {
	s, err := e.db.GetSession(context.Background(), id)
	if err != nil {
		return
	}
	info := sessionInfo(s)
	e.bus.Publish(core.Event{Type: core.EventSessionUpdated, TaskID: s.TaskID, Session: &info})
}

func (e *Engine) publishMessage(typ core.EventType, m store.Message) {
	cm := messageFromStore(m)
	e.bus.Publish(core.Event{Type: typ, TaskID: m.TaskID, Message: &cm})
}

// note appends an engine-written entry to a task's conversation.
func (e *Engine) note(ctx context.Context, taskID, sessionID string, kind core.MessageKind, author, text string, meta map[string]any) {
	metaJSON := "{}"
	if meta != nil {
		b, _ := json.Marshal(meta)
		metaJSON = string(b)
	}
	now := time.Now().UTC()
	m, err := e.db.InsertMessage(context.WithoutCancel(ctx), store.Message{TaskID: taskID, SessionID: sessionID, Kind: string(kind),
		Author: author, Text: text, Meta: metaJSON, CreatedAt: now, UpdatedAt: now})
	if err != nil {
		e.log.Error("record note", "task", taskID, "err", err)
		return
	}
	e.publishMessage(core.EventMessageAdded, m)
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

// mergeMeta lays extra JSON object fields over base.
func mergeMeta(base, extra string) string {
	if extra == "" || extra == "{}" {
		return base
	}
	var a, b map[string]any
	if json.Unmarshal([]byte(base), &a) != nil || json.Unmarshal([]byte(extra), &b) != nil {
		return base
	}
	for k, v := range b {
		a[k] = v
	}
	out, _ := json.Marshal(a)
	return string(out)
}
