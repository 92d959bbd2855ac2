package agent

import (
	"io"
	"time"
)

// Peer is an agent served inside this process over a pair of pipes rather
// than a child process: engine tests run the mock agent this way, so the
// engine's races can be driven without spawning anything. Everything above
// the byte streams (the ACP connection, the line guard, cancels, the
// handler) is the same code a process gets.
type Peer struct {
	// Stdin carries what kandev sends; closing it is the agent's EOF.
	Stdin io.WriteCloser
	// Stdout carries what the agent sends; the agent closes its end when
	// it ends.
	Stdout io.ReadCloser
	// Done closes once the agent has ended; Err then says why (nil: a
	// clean exit).
	Done <-chan struct{}
	Err  func() error
	// Kill ends the agent at once, as SIGKILL ends a process.
	Kill func()
	// PID is the local process that carries the agent, if any (the ssh
	// client of an agent on a host); 0 when there is none.
	PID int
}

// Attach opens an ACP connection to an agent served in this process.
func Attach(spec Spec, h Handler, p Peer) *Run {
	r := &Run{spec: spec, handler: h, stdin: p.Stdin, peer: &p, exited: make(chan struct{}),
		flow: newFlow(), stderrDone: make(chan struct{})}
	close(r.stderrDone)
	stdout := r.connect(p.Stdin, p.Stdout)
	go func() {
		<-p.Done
		r.exitErr = p.Err()
		select {
		case <-stdout.done:
		case <-time.After(stderrSettle):
		}
		close(r.exited)
	}()
	return r
}
