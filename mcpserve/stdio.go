package mcpserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/kandev/kandev/internal/mcpwire"
)

// kandev serves MCP over stdio with its own JSON-RPC loop rather than
// mcp-go's server package (ADR 0039): that package links a general JSON
// Schema engine whose package init cost every kandev command ~6 ms, for a
// server that needs five methods. The wire shapes are internal/mcpwire's.
//
// Messages are newline-delimited JSON-RPC 2.0 (MCP stdio). Every request
// is served on its own goroutine, so a call that waits for a person never
// holds up the others; each message is written whole under one lock; a
// request the client cancels (notifications/cancelled) has its context
// cancelled and gets no answer; on stdin EOF the calls in flight finish
// (calls waiting for a person are cut off) before Run returns.

// JSON-RPC error codes.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternalError  = -32603
)

// transport runs one MCP session over a reader and a writer.
type transport struct {
	b   *bridge
	out io.Writer

	wmu sync.Mutex // one message per write

	mu       sync.Mutex
	inflight map[string]*call // request id -> its call

	// eof is cancelled when the input ends: calls that wait for a person
	// are then cut off, since nobody will read their answer.
	eof       context.Context
	cancelEOF context.CancelFunc
}

// call is a request being served.
type call struct {
	cancel    context.CancelFunc
	cancelled bool // by the client: its answer is dropped
}

func (b *bridge) serve(ctx context.Context, in io.Reader, out io.Writer) error {
	eof, cancelEOF := context.WithCancel(context.Background())
	defer cancelEOF()
	t := &transport{b: b, out: out, inflight: map[string]*call{}, eof: eof, cancelEOF: cancelEOF}
	b.tr = t
	return t.run(ctx, in)
}

func (t *transport) run(ctx context.Context, in io.Reader) error {
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
	if err != nil {
		return fmt.Errorf("mcp: read stdin: %w", err)
	}
	return nil
}

// message is an incoming JSON-RPC message: a request, a notification or
// (never expected: kandev sends no requests) a response.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// rpcError is a JSON-RPC error; it is also the Go error of a method.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return e.Message }

func (t *transport) dispatch(ctx context.Context, wg *sync.WaitGroup, line []byte) {
	var msg message
	if err := json.Unmarshal(line, &msg); err != nil {
		t.writeRaw([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`))
		return
	}
	hasID := len(msg.ID) > 0 && string(msg.ID) != "null"
	switch {
	case msg.Method == "":
		// A response to a request we never send: ignore it.
		return
	case !hasID:
		// Notifications are handled in order, on the read loop.
		t.notification(msg)
		return
	case msg.JSONRPC != mcpwire.JSONRPCVersion:
		t.reply(msg.ID, nil, &rpcError{Code: codeInvalidRequest, Message: "Invalid JSON-RPC version"})
		return
	}
	key := string(msg.ID)
	ctx, cancel := context.WithCancel(ctx)
	c := &call{cancel: cancel}
	t.mu.Lock()
	t.inflight[key] = c
	t.mu.Unlock()
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cancel()
		result, rerr := t.request(ctx, msg)
		t.mu.Lock()
		drop := c.cancelled
		delete(t.inflight, key)
		t.mu.Unlock()
		// A cancelled request gets no answer (MCP cancellation rule).
		if !drop {
			t.reply(msg.ID, result, rerr)
		}
	}()
}

// notification handles a message that wants no answer.
func (t *transport) notification(msg message) {
	switch msg.Method {
	case mcpwire.MethodNotificationCancelled:
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(msg.Params, &p) != nil {
			return
		}
		t.mu.Lock()
		if c, ok := t.inflight[string(p.RequestID)]; ok {
			c.cancelled = true
			c.cancel()
		}
		t.mu.Unlock()
	default:
		// notifications/initialized and anything else: nothing to do.
		t.b.log.Debug("kandev mcp: notification", "method", msg.Method)
	}
}

// request serves one request; a panic in a tool becomes an internal error
// rather than the end of every agent's session.
func (t *transport) request(ctx context.Context, msg message) (result any, rerr *rpcError) {
	defer func() {
		if r := recover(); r != nil {
			result, rerr = nil, &rpcError{Code: codeInternalError, Message: fmt.Sprintf("panic recovered in %s: %v", msg.Method, r)}
		}
	}()
	switch msg.Method {
	case mcpwire.MethodInitialize:
		var p mcpwire.InitializeParams
		if len(msg.Params) > 0 {
			if err := json.Unmarshal(msg.Params, &p); err != nil {
				return nil, &rpcError{Code: codeInvalidParams, Message: err.Error()}
			}
		}
		t.b.log.Debug("kandev mcp: initialize", "client", p.ClientInfo.Name, "protocol", p.ProtocolVersion)
		return t.b.initialize(p.ProtocolVersion), nil
	case mcpwire.MethodPing:
		return struct{}{}, nil
	case mcpwire.MethodToolsList:
		return mcpwire.ListToolsResult{Tools: t.b.defs}, nil
	case mcpwire.MethodToolsCall:
		var p struct {
			Name      string               `json:"name"`
			Arguments json.RawMessage      `json:"arguments"`
			Meta      *mcpwire.RequestMeta `json:"_meta"`
		}
		if len(msg.Params) > 0 {
			if err := json.Unmarshal(msg.Params, &p); err != nil {
				return nil, &rpcError{Code: codeInvalidParams, Message: err.Error()}
			}
		}
		var token any
		if p.Meta != nil {
			token = p.Meta.ProgressToken
		}
		return t.b.call(ctx, p.Name, p.Arguments, token)
	}
	return nil, &rpcError{Code: codeMethodNotFound, Message: fmt.Sprintf("Method %s not found", msg.Method)}
}

// reply answers a request with its result or its error.
func (t *transport) reply(id json.RawMessage, result any, rerr *rpcError) {
	if rerr != nil {
		t.write(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *rpcError       `json:"error"`
		}{mcpwire.JSONRPCVersion, id, rerr})
		return
	}
	t.write(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{mcpwire.JSONRPCVersion, id, result})
}

// notify writes a notification to the client.
func (t *transport) notify(method string, params map[string]any) {
	t.write(mcpwire.Notification{JSONRPC: mcpwire.JSONRPCVersion, Method: method, Params: params})
}

func (t *transport) write(msg any) {
	b, err := json.Marshal(msg)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil,
			"error": map[string]any{"code": codeInternalError, "message": "kandev mcp could not encode a message: " + err.Error()}})
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
