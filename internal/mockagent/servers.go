package mockagent

import (
	"context"
	"fmt"
	"strings"

	acp "github.com/coder/acp-go-sdk"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// A session's servers besides kandev's are the profile's own (ADR 0078).
// The mock starts each as a real agent does: its command with its
// arguments, the server's env added to ours, on first use, and stops it
// with the session.

// serverClient returns an initialised client of the session's server of
// that name, starting it if needed.
func (m *mcpConn) serverClient(ctx context.Context, name string) (*client.Client, error) {
	if name == kandevServerName {
		return m.get(ctx)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errClosed
	}
	if c, ok := m.others[name]; ok {
		return c, nil
	}
	var srv *acp.McpServerStdio
	for _, s := range m.all {
		if s.Stdio != nil && s.Stdio.Name == name {
			srv = s.Stdio
		}
	}
	if srv == nil {
		return nil, fmt.Errorf("no stdio MCP server named %q in this session", name)
	}
	env := make([]string, 0, len(srv.Env))
	for _, e := range srv.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	c, err := startClient(ctx, spawnTransport(srv.Command, srv.Args, env, m.stderr, m.logger), srv.Name)
	if err != nil {
		return nil, err
	}
	if m.others == nil {
		m.others = map[string]*client.Client{}
	}
	m.others[name] = c
	return c, nil
}

// serverNames are the session's stdio servers' names, in session/new's
// order.
func (m *mcpConn) serverNames() []string {
	var out []string
	for _, s := range m.all {
		if s.Stdio != nil {
			out = append(out, s.Stdio.Name)
		}
	}
	return out
}

// servers runs `mock: servers`: each server the session was given, with
// its tools as its tools/list says them, sorted:
// `servers: kandev (a, b); probe (x)`. A server that cannot be reached
// says why in place of its tools.
func (t *turn) servers() error {
	c := t.s.client()
	var parts []string
	for _, name := range c.serverNames() {
		names, err := listToolsOf(t.ctx, c, name)
		if t.ctx.Err() != nil {
			return t.ctx.Err()
		}
		if err != nil {
			parts = append(parts, fmt.Sprintf("%s (error: %v)", name, err))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", name, strings.Join(names, ", ")))
	}
	if len(parts) == 0 {
		t.say("servers: none")
		return nil
	}
	t.say("servers: " + strings.Join(parts, "; "))
	return nil
}

func listToolsOf(ctx context.Context, m *mcpConn, server string) ([]string, error) {
	c, err := m.serverClient(ctx, server)
	if err != nil {
		return nil, err
	}
	return toolNames(ctx, c)
}

// servercall runs `mock: servercall SERVER TOOL {json}`: a tools/call to
// one of the session's servers, said as `result SERVER TOOL: JSON` or
// `error SERVER TOOL: ...`.
func (t *turn) servercall(arg string) error {
	server, rest := splitVerb(arg)
	tool, rawArgs := splitVerb(rest)
	if server == "" || tool == "" {
		t.say("error mock: servercall needs a server and a tool name")
		return nil
	}
	args, err := parseArgs(rawArgs)
	if err != nil {
		t.sayf("error %s %s: mock could not parse arguments: %v", server, tool, err)
		return nil
	}
	c, err := t.s.client().serverClient(t.ctx, server)
	if err == nil {
		req := mcp.CallToolRequest{}
		req.Params.Name = tool
		req.Params.RawArguments = args
		var res *mcp.CallToolResult
		if res, err = c.CallTool(t.ctx, req); err == nil {
			if res.IsError {
				t.sayf("error %s %s: %s", server, tool, resultText(res))
			} else {
				t.sayf("result %s %s: %s", server, tool, resultJSON(res))
			}
			return nil
		}
	}
	if t.ctx.Err() != nil {
		return t.ctx.Err()
	}
	t.sayf("error %s %s: %v", server, tool, err)
	return nil
}
