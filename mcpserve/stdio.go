package mcpserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The stdio transport is kandev's own rather than server.StdioServer:
// mcp-go's keeps its one client session in a package variable, so two
// bridges in one process (tests, benchmarks) would share it, and it
// answers requests its client has cancelled. This one has a session per
// bridge, serves every request on its own goroutine, writes each message
// whole under one lock, drops the answer to a cancelled request, and on
// stdin EOF lets the calls in flight finish (waiting calls are cut off)
// before returning.

// transport runs one MCP session over a reader and a writer.
type transport struct {
	srv  *server.MCPServer
	out  io.Writer
	sess *session

	wmu sync.Mutex // one message per write

	mu       sync.Mutex
	inflight map[string]*bool // request id -> cancelled by the client

	// eof is cancelled when the input ends: calls that wait for a person
	// are then cut off, since nobody will read their answer.
	eof       context.Context
	cancelEOF context.CancelFunc
}

// session is the one client of a bridge.
type session struct {
	id    string
	notes chan mcp.JSONRPCNotification
	mu    sync.Mutex
	init  bool
}

func (s *session) SessionID() string { return s.id }
func (s *session) NotificationChannel() chan<- mcp.JSONRPCNotification {
	return s.notes
}
func (s *session) Initialize() {
	s.mu.Lock()
	s.init = true
	s.mu.Unlock()
}
func (s *session) Initialized() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.init
}

var _ server.ClientSession = (*session)(nil)

func (b *bridge) serve(ctx context.Context, in io.Reader, out io.Writer) error {
	eof, cancelEOF := context.WithCancel(context.Background())
	defer cancelEOF()
	t := &transport{srv: b.srv, out: out, inflight: map[string]*bool{}, eof: eof, cancelEOF: cancelEOF,
		sess: &session{id: "stdio", notes: make(chan mcp.JSONRPCNotification, 16)}}
	b.tr = t
	return t.run(ctx, in)
}

func (t *transport) run(ctx context.Context, in io.Reader) error {
	if err := t.srv.RegisterSession(ctx, t.sess); err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	defer t.srv.UnregisterSession(context.Background(), t.sess.id)
	ctx = t.srv.WithContext(ctx, t.sess)

	// Server-initiated notifications (none are expected today) go out as
	// they come.
	notesDone := make(chan struct{})
	stopNotes := make(chan struct{})
	go func() {
		defer close(notesDone)
		for {
			select {
			case n := <-t.sess.notes:
				t.write(n)
			case <-stopNotes:
				return
			}
		}
	}()

	// The read loop dispatches each message itself: a request gets its own
	// goroutine at once, a notification is handled in order.
	var (
		wg      sync.WaitGroup
		dmu     sync.Mutex
		stopped bool
	)
	readErr := make(chan error, 1)
	go func() {
		r := bufio.NewReaderSize(in, 64<<10)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				dmu.Lock()
				if stopped {
					dmu.Unlock()
					return
				}
				t.dispatch(ctx, &wg, line)
				dmu.Unlock()
			}
			if err != nil {
				if err == io.EOF {
					err = nil
				}
				readErr <- err
				return
			}
		}
	}()

	var err error
	select {
	case <-ctx.Done():
	case err = <-readErr:
	}
	dmu.Lock()
	stopped = true
	dmu.Unlock()
	// The client is gone (or we are told to stop): cut off waiting calls,
	// let the others answer, then stop.
	t.cancelEOF()
	wg.Wait()
	close(stopNotes)
	<-notesDone
	if err != nil {
		return fmt.Errorf("mcp: read stdin: %w", err)
	}
	return nil
}

// envelope is what the transport needs of a message to route it.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

func (t *transport) dispatch(ctx context.Context, wg *sync.WaitGroup, line []byte) {
	line = bytes.TrimSpace(line)
	var env envelope
	if err := json.Unmarshal(line, &env); err != nil {
		t.writeRaw([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`))
		return
	}
	hasID := len(env.ID) > 0 && string(env.ID) != "null"
	switch {
	case env.Method == "":
		// A response to a request we never send: ignore it.
		return
	case !hasID:
		if env.Method == string(mcp.MethodNotificationCancelled) {
			t.markCancelled(string(env.Params.RequestID))
		}
		// Notifications are handled in order, on the read loop.
		t.srv.HandleMessage(ctx, line)
		return
	}
	key := string(env.ID)
	cancelled := new(bool)
	t.mu.Lock()
	t.inflight[key] = cancelled
	t.mu.Unlock()
	msg := append([]byte(nil), line...)
	wg.Add(1)
	go func() {
		defer wg.Done()
		resp := t.srv.HandleMessage(ctx, msg)
		t.mu.Lock()
		drop := *cancelled
		delete(t.inflight, key)
		t.mu.Unlock()
		// A cancelled request gets no answer (MCP cancellation rule).
		if resp != nil && !drop {
			t.write(resp)
		}
	}()
}

func (t *transport) markCancelled(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.inflight[id]; ok {
		*c = true
	}
}

// notify writes a notification to the client.
func (t *transport) notify(method string, params map[string]any) {
	t.write(mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{Method: method, Params: mcp.NotificationParams{AdditionalFields: params}}})
}

func (t *transport) write(msg any) {
	b, err := json.Marshal(msg)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil,
			"error": map[string]any{"code": mcp.INTERNAL_ERROR, "message": "kandev mcp could not encode a message: " + err.Error()}})
	}
	t.writeRaw(b)
}

func (t *transport) writeRaw(b []byte) {
	b = append(b, '\n')
	t.wmu.Lock()
	defer t.wmu.Unlock()
	// A failed write means the client is gone; the read side sees EOF.
	_, _ = t.out.Write(b)
}
