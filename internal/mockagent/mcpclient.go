package mockagent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/kandev/kandev/internal/mcpwire"
)

// The mock agent speaks MCP to `kandev mcp` with a client of its own
// rather than mcp-go's (ADR 0039): that package links mcp-go's server and
// its JSON Schema engine into the kandev binary, whose hidden mock-agent
// subcommand this is. It is the stdio subset an agent needs: spawn,
// initialize, the initialized notification, tools/list and tools/call
// (concurrent calls; a call whose context ends is cancelled with
// notifications/cancelled, as real agents do), and close.

// Bounds on stopping a server that does not leave when its stdin closes.
const (
	mcpGraceful = 2 * time.Second
	mcpForce    = 3 * time.Second
)

// MCPStream joins an MCP server's output (r) and input (w) into one
// connection for an MCPDialer; Close closes both.
func MCPStream(r io.ReadCloser, w io.WriteCloser) io.ReadWriteCloser { return &stream{r, w} }

type stream struct {
	io.ReadCloser
	w io.WriteCloser
}

func (s *stream) Write(p []byte) (int, error) { return s.w.Write(p) }

// Close ends the server's input first, so that it can finish, then stops
// reading its output.
func (s *stream) Close() error {
	return errors.Join(s.w.Close(), s.ReadCloser.Close())
}

// mcpClient is one initialised MCP session over a stream.
type mcpClient struct {
	conn io.ReadWriteCloser
	wait func() error // waits for the server process; nil when dialled

	wmu sync.Mutex // one message per write

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan rpcReply
	readErr error // set when the read loop ends

	done      chan struct{} // closed when the read loop ends
	closeOnce sync.Once
	closeErr  error
}

// rpcReply is a response to one of our requests.
type rpcReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// spawnMCP starts a stdio server: env is added to ours, as agents do, and
// its stderr goes to stderr, never to the ACP stream.
func spawnMCP(command string, args, env []string, stderr io.Writer) (*mcpClient, error) {
	cmd := exec.Command(command, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		_ = in.Close()
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	if err := cmd.Start(); err != nil {
		_ = in.Close()
		_ = out.Close()
		return nil, err
	}
	c := newMCPClient(MCPStream(out, in))
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	c.wait = func() error {
		// The server leaves when its stdin closes; one that does not is
		// asked to, then killed.
		select {
		case err := <-waited:
			return err
		case <-time.After(mcpGraceful):
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-waited:
			return err
		case <-time.After(mcpForce):
		}
		_ = cmd.Process.Kill()
		return <-waited
	}
	return c, nil
}

func newMCPClient(conn io.ReadWriteCloser) *mcpClient {
	c := &mcpClient{conn: conn, pending: map[int64]chan rpcReply{}, done: make(chan struct{})}
	go c.read()
	return c
}

// read routes the server's messages until its output ends.
func (c *mcpClient) read() {
	r := bufio.NewReaderSize(c.conn, 64<<10)
	var err error
	for {
		var line []byte
		line, err = r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			c.route(line)
		}
		if err != nil {
			break
		}
	}
	if err == io.EOF {
		err = errors.New("the MCP server closed its output")
	}
	c.mu.Lock()
	c.readErr = err
	c.mu.Unlock()
	close(c.done)
}

func (c *mcpClient) route(line []byte) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		rpcReply
	}
	if json.Unmarshal(line, &msg) != nil {
		return
	}
	hasID := len(msg.ID) > 0 && string(msg.ID) != "null"
	switch {
	case msg.Method != "" && hasID:
		// A request from the server (kandev sends none): refuse it.
		c.send(map[string]any{"jsonrpc": mcpwire.JSONRPCVersion, "id": msg.ID,
			"error": map[string]any{"code": -32601, "message": "Method " + msg.Method + " not found"}})
	case msg.Method != "":
		// Notifications (progress) need nothing from the mock.
	case hasID:
		var id int64
		if json.Unmarshal(msg.ID, &id) != nil {
			return
		}
		c.mu.Lock()
		ch := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if ch != nil {
			ch <- msg.rpcReply
		}
	}
}

// send writes one message.
func (c *mcpClient) send(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.conn.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write to the MCP server: %w", err)
	}
	return nil
}

// request sends method and decodes its result into out. When ctx ends
// first the server is told with notifications/cancelled (except for
// initialize, which must not be cancelled).
func (c *mcpClient) request(ctx context.Context, method string, params, out any) error {
	ch := make(chan rpcReply, 1)
	c.mu.Lock()
	if c.readErr != nil {
		err := c.readErr
		c.mu.Unlock()
		return err
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}
	msg := map[string]any{"jsonrpc": mcpwire.JSONRPCVersion, "id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if err := c.send(msg); err != nil {
		forget()
		return err
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return fmt.Errorf("%s (JSON-RPC error %d)", r.Error.Message, r.Error.Code)
		}
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(r.Result, out); err != nil {
			return fmt.Errorf("decode the %s result: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		forget()
		if method != mcpwire.MethodInitialize {
			// Best effort: the caller has its error already.
			_ = c.send(map[string]any{"jsonrpc": mcpwire.JSONRPCVersion, "method": mcpwire.MethodNotificationCancelled,
				"params": map[string]any{"requestId": id, "reason": ctx.Err().Error()}})
		}
		return ctx.Err()
	case <-c.done:
		forget()
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.readErr
	}
}

// initialize runs the handshake: the protocol version real agents pin
// and our client name, then the initialized notification.
func (c *mcpClient) initialize(ctx context.Context) error {
	var res mcpwire.InitializeResult
	err := c.request(ctx, mcpwire.MethodInitialize, map[string]any{
		"protocolVersion": mcpwire.LatestLegacyProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      mcpwire.Implementation{Name: mcpClientName, Version: "1"},
	}, &res)
	if err != nil {
		return err
	}
	return c.send(map[string]any{"jsonrpc": mcpwire.JSONRPCVersion, "method": mcpwire.MethodNotificationInitialized})
}

func (c *mcpClient) callTool(ctx context.Context, name string, args json.RawMessage) (*mcpwire.CallToolResult, error) {
	var res mcpwire.CallToolResult
	if err := c.request(ctx, mcpwire.MethodToolsCall, map[string]any{"name": name, "arguments": args}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

func (c *mcpClient) listTools(ctx context.Context) ([]mcpwire.Tool, error) {
	var res mcpwire.ListToolsResult
	if err := c.request(ctx, mcpwire.MethodToolsList, nil, &res); err != nil {
		return nil, err
	}
	return res.Tools, nil
}

// close ends the session: the server's stdin closes, and a spawned server
// is waited for (and stopped if it lingers).
func (c *mcpClient) close() error {
	c.closeOnce.Do(func() {
		c.closeErr = c.conn.Close()
		if c.wait != nil {
			if err := c.wait(); err != nil && c.closeErr == nil {
				c.closeErr = err
			}
		}
		<-c.done
	})
	return c.closeErr
}
