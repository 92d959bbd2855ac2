package engine

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"github.com/kandev/kandev/core"
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
			msg += fmt.Sprintf("; its leftover process group %d was killed", s.PID)
		}
		e.note(ctx, s.TaskID, s.ID, core.MsgStatus, "kandev", msg, map[string]any{"interrupted": true})
		// The task keeps its status: an interrupted run is no transition
		// (its cut prompt is queued again; a question it waits on still waits).
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

// killOrphan kills the process group of a session's agent if it is still
// alive and is really that session's agent: its environment must carry the
// session id, so a recycled pid is never touched.
func killOrphan(s store.Session) bool {
	if s.PID <= 0 {
		return false
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(s.PID) + "/environ")
	if err != nil {
		return false
	}
	if !bytes.Contains(env, []byte("KANDEV_SESSION_ID="+s.ID+"\x00")) {
		return false
	}
	_ = syscall.Kill(-s.PID, syscall.SIGKILL)
	return true
}
