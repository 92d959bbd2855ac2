package mockagent

import (
	"context"
	"fmt"
	"os"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

const (
	// testMCPServerEnv turns the test binary into the test MCP server.
	testMCPServerEnv = "MOCKAGENT_TEST_MCP_SERVER"
	// testTokenEnv travels through the McpServer env list to the server.
	testTokenEnv = "MOCKAGENT_TEST_TOKEN"
)

// serveTestMCP serves a few tools on stdio, standing in for kandev's server.
func serveTestMCP() error {
	s := server.NewMCPServer("mockagent-test", "1", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("echo_struct", mcp.WithDescription("structured echo of the arguments")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			out := map[string]any{"args": req.GetArguments(), "token": os.Getenv(testTokenEnv)}
			return mcp.NewToolResultStructured(out, "echoed"), nil
		})
	s.AddTool(mcp.NewTool("forbidden", mcp.WithDescription("always refuses")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("FORBIDDEN: not yours"), nil
		})
	s.AddTool(mcp.NewTool("text_json", mcp.WithDescription("JSON as text")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("{ \"a\" : [1, 2] }"), nil
		})
	s.AddTool(mcp.NewTool("whoami", mcp.WithDescription("client name and server pid")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name := "?"
			if cs, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
				name = cs.GetClientInfo().Name
			}
			return mcp.NewToolResultText(fmt.Sprintf("%s pid %d", name, os.Getpid())), nil
		})
	s.AddTool(mcp.NewTool("slow", mcp.WithDescription("blocks until cancelled")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(waitTimeout):
				return mcp.NewToolResultText("slow done"), nil
			}
		})
	return server.ServeStdio(s)
}

// testServer describes the test binary as the "kandev" MCP server. Args and
// Env are never nil: ACP requires both keys, and nil would marshal as null.
func testServer(env ...acp.EnvVariable) acp.McpServer {
	return acp.McpServer{Stdio: &acp.McpServerStdio{
		Name:    kandevServerName,
		Command: os.Args[0],
		Args:    []string{},
		Env: append([]acp.EnvVariable{
			{Name: testMCPServerEnv, Value: "1"},
			// Under -race the child would otherwise linger a second on exit.
			{Name: "GORACE", Value: "atexit_sleep_ms=0"},
		}, env...),
	}}
}
