//go:build linux

package tui_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kandev/kandev/core/daemon/daemontest"
)

// TestStartAsksTheTerminalNothing runs the real TUI on a bare pty that
// never answers colour or cursor queries (as some CI terminals do): the
// first row must come without the TUI having sent any query, since each
// unanswered one holds the start for termenv's 5 s timeout. bubbletea's
// own init used to send OSC 11 and a cursor-position query (see
// third_party/bubbletea/KANDEV.md).
func TestStartAsksTheTerminalNothing(t *testing.T) {
	d := daemontest.Start(t)
	d.MustRun("task", "create", "row on a bare pty", "--cwd", t.TempDir())

	cmd := exec.Command(d.Bin)
	// TERM names a terminal termenv would query (not screen, tmux or
	// dumb), and CI is unset: termenv does not query when CI is set.
	env := []string{"TERM=xterm-256color"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CI=") && !strings.HasPrefix(kv, "TERM=") && !strings.HasPrefix(kv, "COLORFGBG=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, d.Env...)
	pty, err := daemontest.StartPTY(cmd, 100, 30)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu  sync.Mutex
		out bytes.Buffer
	)
	row := make(chan struct{})
	go func() {
		buf := make([]byte, 32<<10)
		seen := false
		for {
			n, err := pty.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			if !seen && bytes.Contains(out.Bytes(), []byte("row on a bare pty")) {
				seen = true
				close(row)
			}
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		pty.Close()
	})
	select {
	case <-row:
	case <-time.After(30 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("the task's row never appeared; the terminal got %q", out.String())
	}
	mu.Lock()
	defer mu.Unlock()
	for _, q := range []string{"\x1b]11;?", "\x1b]10;?", "\x1b[6n"} {
		if bytes.Contains(out.Bytes(), []byte(q)) {
			t.Errorf("the TUI asked the terminal %q before its first row; a terminal that never answers holds it for 5 s", q)
		}
	}
}
