package mockagent

import (
	"context"
	"sync"

	acp "github.com/coder/acp-go-sdk"
)

// session is one live ACP session.
type session struct {
	// turn is a one-slot semaphore: turns of a session run one at a time,
	// and waiting for it must honour cancellation, which a mutex cannot.
	turn chan struct{}
	// state is only touched by the goroutine holding turn (or before the
	// session is published).
	state sessionState

	mu  sync.Mutex
	mcp *mcpConn
	// cost is the session's cumulative cost in this process by currency,
	// as `mock: usage` reports it: like Claude Code's adapter, a process
	// that resumes a session counts from zero again. Touched only by the
	// goroutine holding turn.
	cost map[string]float64
}

func (s *session) acquire(ctx context.Context) error {
	select {
	case s.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *session) release() { <-s.turn }

// client returns the session's current MCP connection.
func (s *session) client() *mcpConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mcp
}

// setServers adopts the MCP servers of a resume or load request. The old
// server process belongs to the previous connection's configuration, so it
// is stopped and the new one starts on first use.
func (s *session) setServers(servers []acp.McpServer) {
	s.mu.Lock()
	old := s.mcp
	s.mcp = newMCPConn(servers, old.stderr, old.logger, old.dial)
	s.mu.Unlock()
	old.close()
}

func (s *session) closeMCP() { s.client().close() }
