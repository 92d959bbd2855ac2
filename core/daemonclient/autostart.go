package daemonclient

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kandev/kandev/core"
)

// StartTimeout bounds how long a client waits for a daemon it started.
const StartTimeout = 15 * time.Second

// Connect returns a client of the home's daemon, starting one in the
// background (like tmux does) when none answers. exe is the kandev binary.
//
// A running daemon is found by connecting to its socket, and the command's
// own first request goes over that connection: only the daemon listens
// there, and a version round trip before every command cost ~1 ms of a
// ~12 ms `task show` (issue 14). A daemon that is started is still waited
// for with Ping.
func Connect(ctx context.Context, home core.Home, exe string) (*Client, error) {
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	var d net.Dialer
	conn, err := d.DialContext(pctx, "unix", home.Socket())
	cancel()
	if err == nil {
		return dial(home.Socket(), conn), nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	c := Dial(home.Socket())
	if err := CheckSocketPath(home.Socket()); err != nil {
		return nil, err
	}
	if err := home.Ensure(); err != nil {
		return nil, err
	}
	exited, err := spawn(home, exe)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(StartTimeout)
	wait := 5 * time.Millisecond
	var exitedAt time.Time
	for time.Now().Before(deadline) {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := c.Ping(pctx)
		cancel()
		if err == nil {
			c.started = true
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		select {
		case <-exited:
			// It may have lost the lock to another client's daemon, which
			// then answers shortly; otherwise it failed: say why now.
			if exitedAt.IsZero() {
				exitedAt = time.Now()
			} else if time.Since(exitedAt) > 2*time.Second {
				return nil, &core.Error{Code: core.CodeUnavailable, Message: fmt.Sprintf(
					"the kandev daemon exited during start; its log %s says: %s", home.DaemonLog(), logTail(home.DaemonLog()))}
			}
		default:
		}
		time.Sleep(wait)
		if wait < 100*time.Millisecond {
			wait *= 2
		}
	}
	return nil, &core.Error{Code: core.CodeUnavailable, Message: fmt.Sprintf(
		"the kandev daemon did not start within %s; its log %s says: %s", StartTimeout, home.DaemonLog(), logTail(home.DaemonLog()))}
}

// NotRunning is the error of a command that only reads when no daemon
// runs: it names the home and how to start one, as kandev status does.
func NotRunning(home core.Home) *core.Error {
	return &core.Error{Code: core.CodeUnavailable, Message: fmt.Sprintf(
		"no kandev daemon is running for %s; a command that only reads does not start one, so a stopped daemon stays stopped (start it with: kandev daemon start)", home.Dir)}
}

// ConnectRunning returns a client of the home's daemon, never starting
// one: the connection of every command that only reads (ADR 0072), so
// that after kandev daemon stop nothing a person reads resumes an agent.
// A daemon that holds the home but does not answer yet (recovering its
// runs) is waited for; with none, the error is NotRunning's.
func ConnectRunning(ctx context.Context, home core.Home) (*Client, error) {
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	var d net.Dialer
	conn, err := d.DialContext(pctx, "unix", home.Socket())
	cancel()
	if err == nil {
		return dial(home.Socket(), conn), nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err := CheckSocketPath(home.Socket()); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(StartTimeout)
	c := Dial(home.Socket())
	for wait := 5 * time.Millisecond; ; {
		if !serving(home) {
			c.Close()
			return nil, NotRunning(home)
		}
		if waitingForStart != nil {
			waitingForStart()
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := c.Ping(pctx)
		cancel()
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			c.Close()
			return nil, ctx.Err()
		}
		if time.Now().After(deadline) {
			c.Close()
			return nil, &core.Error{Code: core.CodeUnavailable, Message: fmt.Sprintf(
				"the kandev daemon of %s holds its lock but has not answered within %s; its log %s says: %s", home.Dir, StartTimeout, home.DaemonLog(), logTail(home.DaemonLog()))}
		}
		time.Sleep(wait)
		if wait < 100*time.Millisecond {
			wait *= 2
		}
	}
}

// waitingForStart, when set (tests), is called each time ConnectRunning
// finds a daemon starting that does not answer yet.
var waitingForStart func()

// serving reports whether the pid the home's lock file names is a live
// kandev serve: a daemon that holds the home and is still recovering. It
// never takes the lock (lockHolder does, for an instant, and a daemon
// starting in that instant would lose it), so a read racing a write's
// start cannot make that start fail.
func serving(home core.Home) bool {
	b, err := os.ReadFile(home.Lock())
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	args := strings.Split(string(cmdline), "\x00")
	return len(args) > 1 && slices.Contains(args[1:], "serve")
}

// maxSocketPath is the longest unix socket path Linux accepts.
const maxSocketPath = 107

// CheckSocketPath refuses a home whose socket path the kernel would refuse.
func CheckSocketPath(path string) error {
	if len(path) > maxSocketPath {
		return core.Errorf(core.CodeValidation, "the kandev home is too deep: its socket path %s is %d bytes, and unix sockets allow %d; use a shorter --home or KANDEV_HOME",
			path, len(path), maxSocketPath)
	}
	return nil
}

// spawn starts `kandev serve` detached from this process's session and
// terminal, logging to the home's daemon log. The channel closes if it exits.
func spawn(home core.Home, exe string) (<-chan struct{}, error) {
	logf, err := os.OpenFile(home.DaemonLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open daemon log: %w", err)
	}
	defer logf.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer devnull.Close()
	cmd := exec.Command(exe, "serve", "--home", home.Dir, "--background")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, logf, logf
	cmd.Dir = home.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the kandev daemon: %w", err)
	}
	// The daemon outlives us; reap it in the background if it exits early
	// (for instance because another client's daemon won the lock).
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	return exited, nil
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
