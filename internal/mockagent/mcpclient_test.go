package mockagent

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/mcpserve"
)

// blockingHost is a daemon whose get_task_kandev waits until released and
// whose list_tasks_kandev answers at once.
type blockingHost struct {
	entered   chan string
	release   chan struct{}
	cancelled chan struct{}
}

func (h *blockingHost) ToolSurface(context.Context) (api.ToolSurface, error) {
	return api.ToolSurface{Surface: "kanban_task", TaskID: "t1",
		Tools: []string{"get_task_kandev", "list_tasks_kandev"}}, nil
}

func (h *blockingHost) CallTool(ctx context.Context, name string, _ []byte) (any, error) {
	h.entered <- name
	if name == "list_tasks_kandev" {
		return json.RawMessage(`{"tasks":[]}`), nil
	}
	select {
	case <-h.release:
		return json.RawMessage(`{"id":"t1"}`), nil
	case <-ctx.Done():
		close(h.cancelled)
		return nil, ctx.Err()
	}
}

// The mock's MCP client (mcp-go's), against the real bridge in process:
// calls run concurrently (a blocked call holds up nothing), and a call
// whose context ends is cancelled on the server.
func TestMCPClientConcurrentAndCancel(t *testing.T) {
	leakCheck(t)
	h := &blockingHost{entered: make(chan string, 4), release: make(chan struct{}), cancelled: make(chan struct{})}
	served := make(chan error, 1)
	dial := func(context.Context, acp.McpServerStdio) (io.ReadWriteCloser, error) {
		toSrvR, toSrvW := io.Pipe()
		fromSrvR, fromSrvW := io.Pipe()
		go func() {
			err := mcpserve.Run(context.Background(), toSrvR, fromSrvW, func(string) string { return "" }, mcpserve.WithHost(h))
			fromSrvW.CloseWithError(err)
			toSrvR.Close()
			served <- err
		}()
		return MCPStream(fromSrvR, toSrvW), nil
	}
	c := newMCPConn([]acp.McpServer{testServer()}, io.Discard, slog.New(slog.DiscardHandler), dial)
	ctx := context.Background()
	tools, err := c.listTools(ctx)
	if err != nil || len(tools) != 2 {
		t.Fatalf("tools/list: %v %v", tools, err)
	}

	// A blocked call, then another that answers while the first waits.
	blocked := make(chan error, 1)
	go func() {
		res, err := c.callTool(ctx, "get_task_kandev", []byte(`{}`))
		if err == nil && res.IsError {
			err = errors.New("error result")
		}
		blocked <- err
	}()
	if got := <-h.entered; got != "get_task_kandev" {
		t.Fatalf("entered %s", got)
	}
	res, err := c.callTool(ctx, "list_tasks_kandev", []byte(`{}`))
	if err != nil || res.IsError {
		t.Fatalf("second call while the first waits: %v %v", res, err)
	}
	<-h.entered
	close(h.release)
	if err := <-blocked; err != nil {
		t.Fatalf("first call: %v", err)
	}

	// A call whose context ends is cancelled on the server too.
	h.release = make(chan struct{})
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := c.callTool(cctx, "get_task_kandev", []byte(`{}`))
		done <- err
	}()
	<-h.entered
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call returned %v", err)
	}
	<-h.cancelled

	c.close()
	if err := <-served; err != nil {
		t.Fatalf("server: %v", err)
	}
}
