package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// slowHandler holds the first update until the agent process has been
// reaped, so the rest of what the agent wrote is still unread when it exits.
type slowHandler struct {
	pid     func() int
	mu      sync.Mutex
	updates int
	// text is the chunks' texts joined: the guard may join chunks into
	// fewer updates (ADR 0059).
	text strings.Builder
}

func (h *slowHandler) Update(_ context.Context, n acp.SessionNotification) {
	h.mu.Lock()
	h.updates++
	if c := n.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
		h.text.WriteString(c.Content.Text.Text)
	}
	first := h.updates == 1
	h.mu.Unlock()
	if !first {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && syscall.Kill(h.pid(), 0) == nil {
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *slowHandler) Permission(context.Context, acp.RequestPermissionRequest) acp.RequestPermissionResponse {
	return acp.RequestPermissionResponse{}
}
func (h *slowHandler) Garbage(string) {}
func (h *slowHandler) Fault(string)   {}

func (h *slowHandler) received() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.text.String()
}

// Everything an agent wrote before it exited reaches the handler, even
// when the process is reaped before the daemon has read it all: reaping
// must not close the agent's stdout under the reader (its last words, the
// ones a stall report quotes, were lost that way).
func TestOutputWrittenBeforeExitIsRead(t *testing.T) {
	const n = 400 // more than the flow lets wait unrecorded, so some stay in the pipe
	dir := t.TempDir()
	var b, want strings.Builder
	for i := range n {
		// A session id of its own on each line: the guard joins none of
		// them, so the flow fills and the rest waits in the pipe.
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s%d","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"%d %s"}}}}`+"\n", i, i, strings.Repeat("x", 200))
		fmt.Fprintf(&want, "%d %s", i, strings.Repeat("x", 200))
	}
	lines := filepath.Join(dir, "lines")
	if err := os.WriteFile(lines, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	h := &slowHandler{}
	run, err := Start(Spec{Command: "/bin/sh", Args: []string{"-c", "cat " + lines}, Dir: dir, LogPath: filepath.Join(dir, "log")}, h)
	if err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	h.pid = run.PID
	h.mu.Unlock()
	select {
	case <-run.Exited():
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not exit")
	}
	select {
	case <-run.conn.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the connection did not close")
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(h.received()) < want.Len() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := h.received(); got != want.String() {
		t.Fatalf("%d of the %d bytes of text the agent wrote before exiting reached the handler", len(got), want.Len())
	}
}
