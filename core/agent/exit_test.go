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
}

func (h *slowHandler) Update(_ context.Context, _ acp.SessionNotification) {
	h.mu.Lock()
	h.updates++
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

func (h *slowHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.updates
}

// Everything an agent wrote before it exited reaches the handler, even
// when the process is reaped before the daemon has read it all: reaping
// must not close the agent's stdout under the reader (its last words, the
// ones a stall report quotes, were lost that way).
func TestOutputWrittenBeforeExitIsRead(t *testing.T) {
	const n = 400 // more than the flow lets wait unrecorded, so some stay in the pipe
	dir := t.TempDir()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"%d %s"}}}}`+"\n", i, strings.Repeat("x", 200))
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
	for h.count() < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := h.count(); got != n {
		t.Fatalf("%d of the %d updates the agent wrote before exiting reached the handler", got, n)
	}
}
