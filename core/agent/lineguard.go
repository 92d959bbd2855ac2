package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// MaxLine is the longest line an agent may write on stdout. It is the ACP
// SDK's own limit (acp-go-sdk v0.13.0 scans with a 10 MiB buffer, newline
// included): a longer line would end the connection with a bare "token too
// long", so the guard refuses it first, with a reason, without holding
// more than MaxLine of it.
const MaxLine = 10<<20 - 1

// lineGuard passes ACP's line-delimited JSON through and reports the first
// line that is not JSON, which means the agent is not speaking ACP. It
// reads with bounded buffers: a line over MaxLine ends the stream with a
// fault instead of growing without limit. It also holds session/update
// notifications back while the SDK has too many of them queued.
type lineGuard struct {
	r         *bufio.Reader
	onGarbage func(string)
	onFault   func(string)
	flow      *flow
	line      []byte
	buf       []byte
	join      coalescer
	// dense: the last join took in at least denseJoin; the next one reads
	// what comes as it comes instead of sleeping through its window.
	dense bool
	// windowEnd replaces the package's windowEnd (tests: a window that
	// does not depend on when the test runs).
	windowEnd func(time.Time) time.Time
	// deadline sets the agent's stdout's read deadline, when it has one
	// (a pipe; not an in-process peer): the guard then waits up to
	// joinWait for more chunks to join.
	deadline func(time.Time) error
	err      error
	ready    chan struct{}
}

func (g *lineGuard) Read(p []byte) (int, error) {
	<-g.ready
	for len(g.buf) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		line, err := g.readLine()
		g.flow.setBuffered(g.r.Buffered())
		if err == errLineTooLong {
			g.onFault(fmt.Sprintf("agent wrote a line over %d MiB", (MaxLine+1)>>20))
			g.err = err
			return 0, err
		}
		if len(line) > 0 {
			if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
				g.classify(line, trimmed)
			}
		}
		if err != nil {
			g.err = err
		}
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	return n, nil
}

// classify decides what becomes of one non-blank line: passed to the SDK
// (a session/update counted by the flow first), dropped, or reported as
// garbage.
func (g *lineGuard) classify(line, trimmed []byte) {
	if !json.Valid(trimmed) {
		g.onGarbage(string(trimmed))
		return
	}
	e, ok := scanEnvelope(trimmed)
	if !ok {
		var msg wireMessage
		if json.Unmarshal(trimmed, &msg) != nil {
			// Valid JSON the SDK cannot read as a message: it skips such
			// lines too.
			return
		}
		e = envelope{method: msg.Method, hasID: msg.ID != nil}
	}
	switch {
	case e.method == acp.ClientMethodSessionUpdate && e.hasID:
		// session/update sent as a request: the SDK would hand it to the
		// client's SessionUpdate on a goroutine of its own, out of order
		// and releasing the flow for a notification still queued (an
		// agent could overflow the SDK's queue that way). ACP has it a
		// notification only; the agent gets no answer.
	case !e.isNotification():
		g.buf = line
	case e.method == acp.ClientMethodSessionUpdate:
		// Counted before the SDK decodes its params: a notification it
		// then rejects is released by the SDK's log of the rejection
		// (sdkLog), one it delivers by the client's SessionUpdate.
		g.flow.acquire()
		g.buf = g.coalesce(line, trimmed)
	default:
		// The client handles no other notification: dropped here, so
		// every notification passed on is one the flow sees released.
	}
}

// coalesce returns the session/update line to pass on: the line itself,
// or, when it is a text chunk and the lines after it already read are
// chunks of the same entry, one line with all their texts (coalesce.go).
func (g *lineGuard) coalesce(line, trimmed []byte) []byte {
	if (g.deadline == nil && g.r.Buffered() == 0) || !g.join.start(trimmed) {
		return line
	}
	end := g.windowEnd
	if end == nil {
		end = windowEnd
	}
	until := end(time.Now())
	taken := 0 // bytes of the lines joined after the first
	for {
		ahead, _ := g.r.Peek(g.r.Buffered())
		i := bytes.IndexByte(ahead, '\n')
		if i < 0 {
			if g.wait(until, len(ahead), !g.dense) {
				continue
			}
			break
		}
		if next := bytes.TrimSpace(ahead[:i]); len(next) > 0 && !g.join.add(next) {
			break
		}
		_, _ = g.r.Discard(i + 1)
		taken += i + 1
	}
	g.dense = taken >= denseJoin
	g.flow.setBuffered(g.r.Buffered())
	if g.join.n == 1 {
		return line
	}
	return g.join.finish()
}

// joinWait is the beat of the guard's windows: after a chunk it waits for
// the next ones to join it until the window ends (windowEnd), at most
// this much later. An agent streams a chunk every few milliseconds: the
// SDK then decodes one notification for several chunks, the engine takes
// one. It delays each chunk by at most this much (ADRs 0059, 0063) — a
// kill -9 may lose it beside the recorder's streamFlushDelay.
const joinWait = 60 * time.Millisecond

// windowEnd is when a join begun at now ends: the next multiple of
// joinWait on the wall clock, so that every agent's window ends at the
// same moment — the joins of fifty agents then reach the recorder
// together, and one flush (streamFlushDelay after them) writes them all,
// and the runtime fires their timers at once.
func windowEnd(now time.Time) time.Time {
	return now.Add(joinWait - time.Duration(now.UnixNano()%int64(joinWait)))
}

// denseJoin is how much a join takes in when the agent writes faster than
// a stream of tokens (a burst, a replay): the guard then stops sleeping
// through its windows, as the agent is likely blocked on a full pipe,
// until a join takes less.
const denseJoin = 16 << 10

// readAhead bounds the read after a window slept through, when nothing
// came meanwhile.
const readAhead = time.Millisecond

// wait reads more of the agent's output into the buffer, until at the
// latest, and reports whether more came. A sparse stream (sleep) is slept
// through to until and then read at once: waking for each chunk as it
// lands cost a read and a reschedule per chunk, at fifty agents most of
// what the daemon spent on their streams. A dense one is read as it comes.
func (g *lineGuard) wait(until time.Time, have int, sleep bool) bool {
	now := time.Now()
	if g.deadline == nil || have >= g.r.Size() || !now.Before(until) {
		return false
	}
	if sleep {
		time.Sleep(until.Sub(now))
		until = time.Now().Add(readAhead)
	}
	if g.deadline(until) != nil {
		return false
	}
	_, err := g.r.Peek(have + 1)
	_ = g.deadline(time.Time{})
	return err == nil
}

var errLineTooLong = errors.New("line too long")

// readLine returns the next line, newline included, reusing one buffer of
// at most MaxLine+1 bytes. A longer line is an error: nothing more of the
// stream is read.
func (g *lineGuard) readLine() ([]byte, error) {
	g.line = g.line[:0]
	for {
		frag, err := g.r.ReadSlice('\n')
		if len(g.line)+len(frag) > MaxLine+1 {
			g.line = nil // let the large buffer go
			return nil, errLineTooLong
		}
		g.line = append(g.line, frag...)
		if err == bufio.ErrBufferFull {
			continue
		}
		return g.line, err
	}
}

// wireMessage is the SDK's view of a JSON-RPC message (its anyMessage), so
// the guard classifies a line exactly as the SDK will.
type wireMessage struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      *json.RawMessage  `json:"id,omitempty"`
	Method  string            `json:"method,omitempty"`
	Params  json.RawMessage   `json:"params,omitempty"`
	Result  json.RawMessage   `json:"result,omitempty"`
	Error   *acp.RequestError `json:"error,omitempty"`
}
