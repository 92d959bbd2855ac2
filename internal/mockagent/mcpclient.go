package mockagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// The mock agent speaks MCP to `kandev mcp` with mcp-go's client (ADR
// 0047), over its stdio transport: it spawns the server (the server's env
// added to ours, its stderr to ours), runs the initialize handshake,
// serves concurrent calls (a call whose context ends is cancelled with
// notifications/cancelled, as real agents do) and on close ends the
// server's stdin, then stops a server that lingers (SIGTERM after 2 s,
// kill after 3 s more).

// MCPStream joins an MCP server's output (r) and input (w) into one
// connection for an MCPDialer; Close closes both.
func MCPStream(r io.ReadCloser, w io.WriteCloser) io.ReadWriteCloser { return &stream{r, w} }

type stream struct {
	io.ReadCloser
	w io.WriteCloser
}

func (s *stream) Write(p []byte) (int, error) { return s.w.Write(p) }

// Read reads the server's output; once we have closed it, it has ended
// (mcp-go's transport logs any other error as a failure).
func (s *stream) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	if errors.Is(err, io.ErrClosedPipe) {
		err = io.EOF
	}
	return n, err
}

// Close ends the server's input first, so that it can finish, then stops
// reading its output.
func (s *stream) Close() error {
	return errors.Join(s.w.Close(), s.ReadCloser.Close())
}

// spawnTransport is the stdio transport of a server the mock starts
// itself. Its stderr goes to stderr, never to the ACP stream.
func spawnTransport(command string, args, env []string, stderr io.Writer, logger *slog.Logger) transport.Interface {
	return transport.NewStdioWithOptions(command, env, args,
		transport.WithCommandStderrWriter(stderr),
		transport.WithCommandLogger(logger))
}

// dialTransport is the stdio transport over a connection an MCPDialer
// made: reads get the server's output, writes feed its input, and Close
// ends the session.
func dialTransport(conn io.ReadWriteCloser) transport.Interface {
	return transport.NewIO(conn, conn, nil)
}

// startClient starts an mcp-go client on t and runs the handshake: the
// protocol version real agents pin (the initialize handshake, not the
// stateless protocol) and our client name. The transport is not tied to
// ctx: the server must outlive the turn that starts it, and Close stops it.
// Its errors name the server (command, or name when dialled).
func startClient(ctx context.Context, t transport.Interface, server string) (*client.Client, error) {
	c := client.NewClient(t, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	if err := c.Start(context.Background()); err != nil {
		_ = t.Close() // releases what was made before the start failed
		return nil, fmt.Errorf("start MCP server %s: %w", server, err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: mcpClientName, Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("initialize MCP server %s: %w", server, err)
	}
	return c, nil
}
