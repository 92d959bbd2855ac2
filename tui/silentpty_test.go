//go:build linux

package tui_test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// Terminal queries a program may send at start: the background colour
// (OSC 11), the foreground (OSC 10) and the cursor position (DSR 6).
var terminalQueries = []string{"\x1b]11;?", "\x1b]10;?", "\x1b[6n"}

// ptyEnv is the environment of a terminal program on an xterm that is
// nobody's CI: the conditions under which termenv queries the terminal.
func ptyEnv(d *daemontest.Daemon) []string {
	env := []string{"TERM=xterm-256color", "PATH=/usr/bin:/bin", "HOME=" + d.Home.Dir}
	return append(env, d.Env...)
}

// TestTUISilentTerminal starts the real binary on a pty that never answers
// anything (a bare pty, some CI terminals and hook runners): the TUI draws
// its tree, and neither it nor a plain command writes a terminal query.
//
// Before quietinit, bubbletea's package init sent OSC 11 and a cursor
// query and waited 5 s for answers that never came. The test does not time
// the TUI: it fails on the query it finds in the output whatever the speed,
// and the 3 s bound is only how long it waits for the row (which comes in
// ~100 ms on a loaded 2-core machine, and 5 s later on the old code).
func TestTUISilentTerminal(t *testing.T) {
	d := daemontest.Start(t)
	task := createTask(t, d, api.CreateTaskInput{Title: "Draw me on a silent terminal"})

	// A plain command on the same silent terminal sends no query either.
	cmd := exec.Command(d.Bin, "version")
	cmd.Env = ptyEnv(d)
	out := readPTY(t, cmd, "", 3*time.Second)
	for _, q := range terminalQueries {
		if strings.Contains(out, q) {
			t.Errorf("kandev version wrote the terminal query %q on a terminal: %q", q, out)
		}
	}

	cmd = exec.Command(d.Bin)
	cmd.Env = ptyEnv(d)
	out = readPTY(t, cmd, task.Title, 3*time.Second)
	if !strings.Contains(out, task.Title) {
		t.Fatalf("the TUI did not draw its first row within 3s on a terminal that answers nothing; it wrote %q", out)
	}
	for _, q := range terminalQueries {
		if strings.Contains(out, q) {
			t.Errorf("the TUI wrote the terminal query %q before its first row: %q", q, out)
		}
	}
}

// readPTY runs cmd on a pty that answers nothing and returns what it
// wrote until want appears (want "": until it exits), or until wait has
// passed. The process is killed at the end.
func readPTY(t *testing.T, cmd *exec.Cmd, want string, wait time.Duration) string {
	t.Helper()
	pty, err := daemontest.StartPTY(cmd, 100, 30)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var seen bytes.Buffer
	go func() {
		defer close(done)
		buf := make([]byte, 32<<10)
		for {
			n, err := pty.Read(buf)
			seen.Write(buf[:n])
			if want != "" && bytes.Contains(seen.Bytes(), []byte(want)) || err != nil {
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(wait):
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	pty.Close() // ends the reader if it is still reading
	<-done
	return seen.String()
}
