package daemonclient

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// Status is what a client can learn about the home's daemon without
// starting one.
type Status struct {
	Running bool `json:"running"`
	// Answering: the daemon answered on its socket. A daemon that holds
	// the home but does not answer yet is still starting (recovering its
	// sessions) or is wedged.
	Answering     bool      `json:"answering"`
	PID           int       `json:"pid,omitempty"`
	Version       string    `json:"version,omitempty"`
	SchemaVersion int       `json:"schema_version,omitempty"`
	Home          string    `json:"home"`
	Socket        string    `json:"socket"`
	StartedAt     time.Time `json:"started_at,omitzero"`
	UptimeSeconds int64     `json:"uptime_seconds,omitempty"`
	LiveRuns      int       `json:"live_runs"`
	// Running counts the running tasks (core.Task.Running), as kandev
	// status does.
	RunningTasks int `json:"running_tasks"`
	// Resumed are the interrupted runs the daemon resumed by itself when
	// it started.
	Resumed []api.ResumedRun `json:"resumed,omitempty"`
}

// probeTimeout bounds one question to a daemon that may be wedged.
const probeTimeout = 2 * time.Second

// Ping reports whether the home's daemon answers, never starting one: the
// check behind commands that must not spawn a daemon (a status bar, shell
// completion). A home with no socket file is answered at once, without a
// dial.
func Ping(ctx context.Context, home core.Home) (*Client, bool) {
	if _, err := os.Stat(home.Socket()); err != nil {
		return nil, false
	}
	c := Dial(home.Socket())
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if err := c.Ping(pctx); err != nil {
		c.Close()
		return nil, false
	}
	return c, true
}

// Probe describes the home's daemon, never starting one.
func Probe(ctx context.Context, home core.Home) (Status, error) {
	st := Status{Home: home.Dir, Socket: home.Socket()}
	if _, err := os.Stat(home.Socket()); err == nil {
		c := Dial(home.Socket())
		defer c.Close()
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		v, err := c.Version(pctx)
		cancel()
		if err == nil {
			st.Running, st.Answering = true, true
			st.PID, st.Version, st.SchemaVersion, st.LiveRuns, st.RunningTasks = v.PID, v.Version, v.SchemaVersion, v.LiveRuns, v.Running
			st.StartedAt, st.Resumed = v.StartedAt, v.Resumed
			if !v.StartedAt.IsZero() {
				st.UptimeSeconds = int64(time.Since(v.StartedAt) / time.Second)
			}
			return st, nil
		}
		if ctx.Err() != nil {
			return st, ctx.Err()
		}
	}
	// No answer: the lock says whether a daemon holds the home anyway.
	pid, held, err := lockHolder(home)
	if err != nil {
		return st, err
	}
	st.Running, st.PID = held, pid
	return st, nil
}

// lockHolder reports whether a daemon holds the home's lock, and the pid it
// wrote there. It takes the lock for an instant to find out (flock has no
// query); a daemon starting in that instant loses the race and exits, and
// its client sees the one that answers after.
func lockHolder(home core.Home) (pid int, held bool, err error) {
	f, err := os.OpenFile(home.Lock(), os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("open the daemon lock: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return 0, false, nil
	} else if !errors.Is(err, syscall.EWOULDBLOCK) {
		return 0, false, fmt.Errorf("probe the daemon lock %s: %w", home.Lock(), err)
	}
	b, err := os.ReadFile(home.Lock())
	if err != nil {
		return 0, true, fmt.Errorf("read the daemon lock: %w", err)
	}
	pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, true, nil
}

// DefaultStopTimeout bounds how long Stop waits for the daemon to exit:
// its agents get their teardown grace (session/cancel, SIGINT, SIGTERM,
// SIGKILL) and in-flight requests theirs.
const DefaultStopTimeout = 30 * time.Second

// StopResult says what Stop did.
type StopResult struct {
	// WasRunning is false when no daemon held the home.
	WasRunning bool `json:"was_running"`
	PID        int  `json:"pid,omitempty"`
}

// Stop ends the home's daemon the way SIGTERM does (agents stopped, their
// sessions marked interrupted) and returns once it has exited, that is
// once it released the home's lock, which it does last. No daemon is not
// an error.
func Stop(ctx context.Context, home core.Home, timeout time.Duration) (StopResult, error) {
	st, err := Probe(ctx, home)
	if err != nil {
		return StopResult{}, err
	}
	if !st.Running {
		return StopResult{}, nil
	}
	res := StopResult{WasRunning: true, PID: st.PID}
	if st.PID <= 0 {
		return res, core.Errorf(core.CodeInternal, "a kandev daemon holds %s but its pid is unknown (lock file %s)", home.Dir, home.Lock())
	}
	if err := syscall.Kill(st.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return res, fmt.Errorf("signal the kandev daemon (pid %d): %w", st.PID, err)
	}
	deadline := time.Now().Add(timeout)
	wait := 5 * time.Millisecond
	for {
		_, held, err := lockHolder(home)
		if err != nil {
			return res, err
		}
		if !held {
			return res, nil
		}
		if time.Now().After(deadline) {
			return res, &core.Error{Code: core.CodeUnavailable, Message: fmt.Sprintf(
				"the kandev daemon (pid %d) did not exit within %s of SIGTERM; its log %s says: %s (kill -9 %d ends it, leaving its agents' sessions to be recovered on the next start)",
				st.PID, timeout, home.DaemonLog(), logTail(home.DaemonLog()), st.PID)}
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(wait):
		}
		if wait < 50*time.Millisecond {
			wait *= 2
		}
	}
}
