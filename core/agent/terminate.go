package agent

import (
	"context"
	"syscall"
	"time"
)

// Grace is how long each step of Terminate waits for the process to exit.
type Grace struct {
	Cancel, Interrupt, Terminate time.Duration
}

// DefaultGrace keeps a stop prompt while giving a well-behaved agent time to
// save its session.
var DefaultGrace = Grace{Cancel: 2 * time.Second, Interrupt: 2 * time.Second, Terminate: 2 * time.Second}

// Terminate tears the agent down: session/cancel, close stdin, then SIGINT,
// SIGTERM and SIGKILL to the whole process group and to every process that
// carries the session's id (helpers that left the group, setsid
// grandchildren), each after a grace period. It returns once the leader has
// exited and those processes are killed and gone (or, for one stuck in the
// kernel, after a bounded wait).
func (r *Run) Terminate(g Grace) {
	r.flow.close()
	ctx, cancel := context.WithTimeout(context.Background(), g.Cancel)
	_ = r.Cancel(ctx)
	cancel()
	r.stdin.Close()
	if r.peer != nil {
		r.terminatePeer(g)
		return
	}
	pgid := r.PID()
	id := r.spec.SessionID
	steps := []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{0, g.Cancel}, {syscall.SIGINT, g.Interrupt}, {syscall.SIGTERM, g.Terminate}}
	for _, s := range steps {
		if s.sig != 0 {
			_ = syscall.Kill(-pgid, s.sig)
			signalSession(id, s.sig)
		}
		select {
		case <-r.exited:
		case <-time.After(s.wait):
			continue
		}
		break
	}
	// The leader is gone or out of time; whatever it leaves behind, in
	// the group (such as the kandev mcp bridge) or out of it, must not
	// outlive it.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-r.exited
	KillSession(id, killWait)
	// Everything of the session is gone, so the reader reaches EOF once it
	// has taken what is left in the pipe; only a process that escaped the
	// session's id can still hold the pipe open, and it must not hold the
	// reader forever. Never closed earlier: what an agent wrote just before
	// it exited is read, however slowly the daemon gets to it.
	select {
	case <-r.stdoutDone:
	case <-time.After(killWait):
	}
	r.stdout.Close()
}

// killWait bounds the wait for SIGKILLed processes to disappear.
const killWait = 5 * time.Second

// terminatePeer is Terminate for an agent in this process: after the
// cancel and the closed stdin, the grace a process would get before its
// signals, then the kill.
func (r *Run) terminatePeer(g Grace) {
	select {
	case <-r.exited:
	case <-time.After(g.Cancel + g.Interrupt + g.Terminate):
		r.peer.Kill()
		<-r.exited
	}
	r.stdout.Close()
}
