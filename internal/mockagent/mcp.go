package mockagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"

	acp "github.com/coder/acp-go-sdk"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// kandevServerName is the MCP server kandev hands every agent.
const kandevServerName = "kandev"

// mcpClientName is how the mock agent introduces itself to MCP servers.
const mcpClientName = "kandev-mock-agent"

// errClosed is returned by an MCP connection used after shutdown.
var errClosed = errors.New("mcp client closed")

// mcpConn is a lazily started MCP client for one session's kandev server.
// It starts the server on first use, as real agents do, so that sessions
// whose prompts never call a tool never spawn a process.
type mcpConn struct {
	server *acp.McpServerStdio // nil when the session has no kandev server
	stderr io.Writer
	logger *slog.Logger
	dial   MCPDialer // nil: start the server's command

	// all are the session's servers, kandev's and the profile's own
	// (servers.go), in session/new's order.
	all []acp.McpServer

	mu     sync.Mutex
	client *client.Client
	// others are the clients of the servers besides kandev's, started on
	// first use.
	others map[string]*client.Client
	closed bool
}

func newMCPConn(servers []acp.McpServer, stderr io.Writer, logger *slog.Logger, dial MCPDialer) *mcpConn {
	return &mcpConn{server: findKandevServer(servers), all: servers, stderr: stderr, logger: logger, dial: dial}
}

// MCPDialer reaches the kandev MCP server a session was given without
// starting its command: in-process tests serve it over pipes (MCPStream).
// Reads get the server's output, writes feed its input, and Close ends
// the session.
type MCPDialer func(ctx context.Context, server acp.McpServerStdio) (io.ReadWriteCloser, error)

// findKandevServer picks the stdio server named "kandev"; kandev offers no
// other transport to agents.
func findKandevServer(servers []acp.McpServer) *acp.McpServerStdio {
	for _, s := range servers {
		if s.Stdio != nil && s.Stdio.Name == kandevServerName {
			return s.Stdio
		}
	}
	return nil
}

// get returns an initialised client, starting the server if needed.
func (m *mcpConn) get(ctx context.Context) (*client.Client, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errClosed
	}
	if m.client != nil {
		return m.client, nil
	}
	if m.server == nil {
		return nil, fmt.Errorf("no stdio MCP server named %q in this session", kandevServerName)
	}
	c, err := m.start(ctx)
	if err != nil {
		return nil, err
	}
	m.client = c
	return c, nil
}

func (m *mcpConn) start(ctx context.Context) (*client.Client, error) {
	if m.dial != nil {
		conn, err := m.dial(ctx, *m.server)
		if err != nil {
			return nil, fmt.Errorf("reach MCP server %s: %w", m.server.Name, err)
		}
		return startClient(ctx, dialTransport(conn), m.server.Name)
	}
	env := make([]string, 0, len(m.server.Env))
	for _, e := range m.server.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	return startClient(ctx, spawnTransport(m.server.Command, m.server.Args, env, m.stderr, m.logger), m.server.Command)
}

func (m *mcpConn) callTool(ctx context.Context, name string, args []byte) (*mcp.CallToolResult, error) {
	c, err := m.get(ctx)
	if err != nil {
		return nil, err
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.RawArguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("tools/call %s: %w", name, err)
	}
	return res, nil
}

// listTools returns the server's tool names, sorted.
func (m *mcpConn) listTools(ctx context.Context) ([]string, error) {
	c, err := m.get(ctx)
	if err != nil {
		return nil, err
	}
	return toolNames(ctx, c)
}

// toolNames is a server's tools/list answer: its tool names, sorted.
func toolNames(ctx context.Context, c *client.Client) ([]string, error) {
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, fmt.Errorf("tools/list: %w", err)
	}
	names := make([]string, 0, len(res.Tools))
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	return names, nil
}

// close stops the server process, if one was started. Later calls fail.
func (m *mcpConn) close() {
	m.mu.Lock()
	cs := []*client.Client{m.client}
	for _, o := range m.others {
		cs = append(cs, o)
	}
	m.client, m.others = nil, nil
	m.closed = true
	m.mu.Unlock()
	for _, c := range cs {
		if c == nil {
			continue
		}
		if err := c.Close(); err != nil {
			m.logger.Debug("close MCP client", "err", err)
		}
	}
}
