package daemon

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/kandev/kandev/core"
)

// StartTimeout bounds how long a client waits for a daemon it started.
const StartTimeout = 15 * time.Second

// Connect returns a client of the home's daemon, starting one in the
// background (like tmux does) when none answers. exe is the kandev binary.
func Connect(ctx context.Context, home core.Home, exe string) (*Client, error) {
	c := Dial(home.Socket())
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	err := c.Ping(pctx)
	cancel()
	if err == nil {
		return c, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err := home.Ensure(); err != nil {
		return nil, err
	}
	if err := spawn(home, exe); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(StartTimeout)
	wait := 5 * time.Millisecond
	for time.Now().Before(deadline) {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := c.Ping(pctx)
		cancel()
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		time.Sleep(wait)
		if wait < 100*time.Millisecond {
			wait *= 2
		}
	}
	return nil, &core.Error{Code: core.CodeUnavailable, Message: fmt.Sprintf(
		"the kandev daemon did not start within %s; its log %s says: %s", StartTimeout, home.DaemonLog(), logTail(home.DaemonLog()))}
}

// spawn starts `kandev serve` detached from this process's session and
// terminal, logging to the home's daemon log.
func spawn(home core.Home, exe string) error {
	logf, err := os.OpenFile(home.DaemonLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open daemon log: %w", err)
	}
	defer logf.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer devnull.Close()
	cmd := exec.Command(exe, "serve", "--home", home.Dir, "--background")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, logf, logf
	cmd.Dir = home.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the kandev daemon: %w", err)
	}
	// The daemon outlives us; reap it in the background if it exits early
	// (for instance because another client's daemon won the lock).
	go func() { _ = cmd.Wait() }()
	return nil
}

func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log)"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, " | ")
}
