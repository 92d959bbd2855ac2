package cmd

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon"
	"github.com/kandev/kandev/core/daemonclient"
)

// NewCmdDaemon groups the daemon's lifecycle verbs. None of them starts a
// daemon except start and restart.
func NewCmdDaemon(f *Factory) *cobra.Command {
	c := group("daemon", "Show, start, stop or restart the kandev daemon",
		`The daemon (kandev serve) holds the task tree and runs the agents. A command that changes
work (task create, start, message, answer, …) and the UI start it in the background when none
runs; a command that only reads (task list, task show, task log, wait, status, …) never does,
so a daemon stopped with kandev daemon stop stays stopped until one of those or
kandev daemon start. A daemon that starts resumes the runs the last one's exit cut short,
and the command that started it names them on stderr (the UI on its status line).`)
	c.AddCommand(NewCmdDaemonStatus(f, nil), NewCmdDaemonStart(f, nil), NewCmdDaemonStop(f, nil), NewCmdDaemonRestart(f, nil))
	return c
}

// DaemonStartOptions are `daemon start`'s inputs.
type DaemonStartOptions struct {
	F   *Factory
	Web string
}

// NewCmdDaemonStart builds `kandev daemon start`.
func NewCmdDaemonStart(f *Factory, runF func(*DaemonStartOptions) error) *cobra.Command {
	opts := &DaemonStartOptions{F: f}
	c := &cobra.Command{
		Use:   "start",
		Short: "Start the daemon in the background, unless one runs",
		Long: `Start the home's daemon in the background (kandev serve --background), unless one runs already,
and say its pid. The runs the last daemon's exit cut short are resumed, and named on stderr
(kandev serve --no-resume, or KANDEV_NO_RESUME=1, leaves them for an explicit start).

--web ADDR serves the web inbox on ADDR (as web_listen does; docs/web.md). A daemon
already running keeps what it was started with: restart it to change that.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return daemonStartRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Web, "web", "", "serve the web inbox on ADDR, such as 127.0.0.1:8421")
	return c
}

func daemonStartRun(ctx context.Context, opts *DaemonStartOptions) error {
	f := opts.F
	home, err := f.ResolveHome()
	if err != nil {
		return err
	}
	before, err := daemonclient.Probe(ctx, home)
	if err != nil {
		return err
	}
	if opts.Web != "" {
		if _, err := daemon.Loopback(opts.Web); err != nil {
			return usagef("--web: %v", err)
		}
		if before.Running {
			fmt.Fprintln(f.IO.ErrOut, "The kandev daemon already runs, as it was started: --web applies to a daemon this starts (kandev daemon stop first, or set web_listen and restart it)")
		}
		// The daemon a client starts inherits the environment, and
		// KANDEV_WEB_LISTEN is web_listen's variable.
		if err := os.Setenv("KANDEV_WEB_LISTEN", opts.Web); err != nil {
			return err
		}
	}
	if _, err := f.Client(ctx); err != nil {
		return err
	}
	st, err := daemonclient.Probe(ctx, home)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(st)
	}
	if before.Running {
		fmt.Fprintf(f.IO.ErrOut, "The kandev daemon already runs (pid %d)\n", st.PID)
	} else if f.resumedNotice == "" {
		fmt.Fprintf(f.IO.ErrOut, "Started the kandev daemon (pid %d)\n", st.PID)
	}
	return nil
}

// DaemonStatusOptions are `daemon status`'s inputs.
type DaemonStatusOptions struct {
	F *Factory
}

// NewCmdDaemonStatus builds `kandev daemon status`.
func NewCmdDaemonStatus(f *Factory, runF func(*DaemonStatusOptions) error) *cobra.Command {
	opts := &DaemonStatusOptions{F: f}
	return &cobra.Command{
		Use:   "status",
		Short: "Say whether the daemon runs: pid, version, home, socket, uptime, live agent runs",
		Long: `Say whether the home's daemon runs, without starting it: its pid, version, home, socket,
uptime, the tasks running (as kandev status counts them: a turn under way, not waiting on
you) and the agent processes it holds (idle ones between turns included). Exits 0 either
way; --json has "running".`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return daemonStatusRun(c.Context(), opts)
		},
	}
}

func daemonStatusRun(ctx context.Context, opts *DaemonStatusOptions) error {
	f := opts.F
	home, err := f.ResolveHome()
	if err != nil {
		return err
	}
	st, err := daemonclient.Probe(ctx, home)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(st)
	}
	printDaemonStatus(f, st)
	return nil
}

// resumedList names the runs a daemon resumed at its start.
func resumedList(rs []api.ResumedRun) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, r.TaskID)
	}
	return strings.Join(parts, ", ")
}

func printDaemonStatus(f *Factory, st daemonclient.Status) {
	switch {
	case !st.Running:
		fmt.Fprintln(f.IO.Out, "running:  no")
	case !st.Answering:
		fmt.Fprintf(f.IO.Out, "running:  yes, not answering yet (starting, or wedged)\npid:      %d\n", st.PID)
	default:
		fmt.Fprintf(f.IO.Out, "running:  yes\npid:      %d\nversion:  %s (schema %d)\n", st.PID, st.Version, st.SchemaVersion)
		if !st.StartedAt.IsZero() {
			fmt.Fprintf(f.IO.Out, "uptime:   %s (since %s)\n", time.Duration(st.UptimeSeconds)*time.Second, st.StartedAt.Local().Format(time.DateTime))
		}
		// "running" means what kandev status and the TUI count; the
		// processes include agents idle between turns.
		fmt.Fprintf(f.IO.Out, "tasks:    %d running\nagents:   %d processes\n", st.RunningTasks, st.LiveRuns)
		if len(st.Resumed) > 0 {
			fmt.Fprintf(f.IO.Out, "resumed:  %s (interrupted runs it resumed at its start)\n", resumedList(st.Resumed))
		}
	}
	fmt.Fprintf(f.IO.Out, "home:     %s\nsocket:   %s\n", st.Home, st.Socket)
}

// DaemonStopOptions are `daemon stop`'s inputs.
type DaemonStopOptions struct {
	F       *Factory
	Timeout time.Duration
}

// NewCmdDaemonStop builds `kandev daemon stop`.
func NewCmdDaemonStop(f *Factory, runF func(*DaemonStopOptions) error) *cobra.Command {
	opts := &DaemonStopOptions{F: f}
	c := &cobra.Command{
		Use:   "stop [--timeout D]",
		Short: "Stop the daemon as SIGTERM does, and wait until it has exited",
		Long: `Stop the home's daemon the way SIGTERM does: its agents are stopped and their sessions
marked interrupted. Returns once the daemon has exited, or fails after --timeout naming its
pid. With no daemon running it says so and exits 0.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return daemonStopRun(c.Context(), opts)
		},
	}
	c.Flags().DurationVar(&opts.Timeout, "timeout", daemonclient.DefaultStopTimeout, "how long to wait for the daemon to exit")
	return c
}

func daemonStopRun(ctx context.Context, opts *DaemonStopOptions) error {
	f := opts.F
	home, err := f.ResolveHome()
	if err != nil {
		return err
	}
	res, err := daemonclient.Stop(ctx, home, opts.Timeout)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(res)
	}
	if !res.WasRunning {
		fmt.Fprintln(f.IO.ErrOut, "No kandev daemon is running for "+home.Dir)
		return nil
	}
	fmt.Fprintf(f.IO.ErrOut, "Stopped the kandev daemon (pid %d)\n", res.PID)
	return nil
}

// DaemonRestartOptions are `daemon restart`'s inputs.
type DaemonRestartOptions struct {
	F       *Factory
	Timeout time.Duration
}

// NewCmdDaemonRestart builds `kandev daemon restart`.
func NewCmdDaemonRestart(f *Factory, runF func(*DaemonRestartOptions) error) *cobra.Command {
	opts := &DaemonRestartOptions{F: f}
	c := &cobra.Command{
		Use:   "restart [--timeout D]",
		Short: "Stop the daemon (if it runs) and start it again in the background",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return daemonRestartRun(c.Context(), opts)
		},
	}
	c.Flags().DurationVar(&opts.Timeout, "timeout", daemonclient.DefaultStopTimeout, "how long to wait for the old daemon to exit")
	return c
}

func daemonRestartRun(ctx context.Context, opts *DaemonRestartOptions) error {
	f := opts.F
	home, err := f.ResolveHome()
	if err != nil {
		return err
	}
	res, err := daemonclient.Stop(ctx, home, opts.Timeout)
	if err != nil {
		return err
	}
	// Through the factory: the runs the new daemon resumed are named.
	if _, err := f.Client(ctx); err != nil {
		return err
	}
	st, err := daemonclient.Probe(ctx, home)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(st)
	}
	if res.WasRunning {
		fmt.Fprintf(f.IO.ErrOut, "Restarted the kandev daemon (pid %d, was %d)\n", st.PID, res.PID)
	} else {
		fmt.Fprintf(f.IO.ErrOut, "Started the kandev daemon (pid %d)\n", st.PID)
	}
	return nil
}
