package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// kandev serves MCP over stdio with mcp-go's StdioServer (ADR 0047). What
// is kandev's own here is only what mcp-go's transport leaves to its
// caller:
//
//   - a cap on one message (input): mcp-go reads lines of any length, and
//     the bridge is an agent's child that a hostile client must not make
//     grow without bound;
//   - telling stdin's end from the client's cancel (input): at EOF mcp-go
//     cancels every call in flight, and a call that does not wait for a
//     person should still answer (handler, outlivesInput);
//   - dropping the answer to a call the client cancelled (output), which
//     MCP asks of a server and mcp-go sends anyway;
//   - progress notifications written by the bridge (output): mcp-go's
//     stdio session, and with it its notification channel, is one package
//     variable that every bridge of a process (tests run several) shares.

// MaxMessage is the largest message a client may send, newline included:
// more than the daemon takes in one request (8 MiB), with room for the
// JSON-RPC envelope. A longer one ends the session.
const MaxMessage = 10 << 20

// workerPool is how many tool calls mcp-go serves at once (its default is
// 5); calls beyond it queue. At most MaxWaitingCalls of them wait for a
// person, so the others are never queued behind those.
const workerPool = 32

// errInputEnded is the cause of the context mcp-go serves requests under
// once stdin has ended.
var errInputEnded = errors.New("stdin ended")

func (b *bridge) serve(ctx context.Context, in io.Reader, out io.Writer, maxMsg int) error {
	ctx, endInput := context.WithCancelCause(ctx)
	defer endInput(nil)
	b.out = &output{w: out}
	errLog := log.New(io.Discard, "", 0)
	if b.log.Enabled(ctx, slog.LevelDebug) {
		errLog = slog.NewLogLogger(b.log.Handler(), slog.LevelDebug)
	}
	stdio := server.NewStdioServer(b.srv)
	server.WithErrorLogger(errLog)(stdio)
	server.WithWorkerPoolSize(workerPool)(stdio)
	err := stdio.Listen(ctx, &input{r: in, max: maxMsg, end: endInput}, b.out)
	switch {
	case errors.Is(context.Cause(ctx), errInputEnded):
		// Stdin ended: the calls in flight have answered.
		return nil
	case err != nil && ctx.Err() != nil:
		// Run's context ended: told to stop.
		return nil
	case err != nil:
		return fmt.Errorf("mcp: read stdin: %w", err)
	}
	return nil
}

// outlivesInput is the context of a call that should answer even when
// stdin ends while it runs: it ends when ctx ends for any other reason
// (the client's notifications/cancelled, Run's end).
func outlivesInput(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if !errors.Is(context.Cause(ctx), errInputEnded) {
			cancel()
		}
	})
	return c, func() { stop(); cancel() }
}

// ErrMessageTooLong ends a session whose client sent a message longer than
// MaxMessage.
var ErrMessageTooLong = errors.New("a message from the client is over the size cap")

// input is stdin as mcp-go's transport reads it: a line longer than max
// fails the read, and the end of stdin first cancels the requests' context
// with errInputEnded, so that calls can tell it from a cancel.
type input struct {
	r    io.Reader
	max  int
	line int // bytes read since the last newline
	end  context.CancelCauseFunc
	err  error
}

func (in *input) Read(p []byte) (int, error) {
	if in.err != nil {
		if in.err == io.EOF {
			in.end(errInputEnded)
		}
		return 0, in.err
	}
	n, err := in.r.Read(p)
	if n > 0 && err == io.EOF {
		// The bytes first, so that their lines are served; EOF next time.
		in.err, err = io.EOF, nil
	}
	for off := 0; off < n; {
		i := bytes.IndexByte(p[off:n], '\n')
		if i < 0 {
			in.line += n - off
			break
		}
		if in.line+i+1 > in.max {
			// The line is too long: it is handed on without its newline,
			// so it never completes, and the next read fails.
			in.err = ErrMessageTooLong
			return off + i, nil
		}
		in.line, off = 0, off+i+1
	}
	if in.line > in.max {
		in.err = ErrMessageTooLong
		return n, nil
	}
	if err == io.EOF {
		in.end(errInputEnded)
	}
	return n, err
}

// output is stdout, shared by mcp-go's transport and the bridge: each
// Write is one whole message (mcp-go writes each in one call), and the
// answers to cancelled calls are dropped.
type output struct {
	mu      sync.Mutex
	w       io.Writer
	dropped map[string]bool // JSON of the ids whose answer is dropped
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.dropped) > 0 {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(p, &msg) == nil && msg.Method == "" && o.dropped[string(msg.ID)] {
			delete(o.dropped, string(msg.ID))
			return len(p), nil
		}
	}
	// A failed write means the client is gone; the read side sees EOF.
	return o.w.Write(p)
}

// drop marks the answer to request id to be dropped.
func (o *output) drop(id any) {
	key, err := json.Marshal(id)
	if err != nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dropped == nil {
		o.dropped = map[string]bool{}
	}
	o.dropped[string(key)] = true
}

// notify writes a notification to the client.
func (o *output) notify(method string, params map[string]any) {
	b, err := json.Marshal(mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{Method: method, Params: mcp.NotificationParams{AdditionalFields: params}}})
	if err != nil {
		return
	}
	_, _ = o.Write(append(b, '\n'))
}
