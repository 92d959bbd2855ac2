package cmd

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core/daemonclient"
)

// NewCmdDaemon groups the daemon's lifecycle verbs. None of them starts a
// daemon except restart.
func NewCmdDaemon(f *Factory) *cobra.Command {
	c := group("daemon", "Show, stop or restart the kandev daemon",
		`The daemon (kandev serve) holds the task tree and runs the agents. Any command that needs it
starts it in the background; these commands look at it without starting it, stop it, or
restart it.`)
	c.AddCommand(newCmdDaemonStatus(f), newCmdDaemonStop(f), newCmdDaemonRestart(f))
	return c
}

func newCmdDaemonStatus(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Say whether the daemon runs: pid, version, home, socket, uptime, live agent runs",
		Long: `Say whether the home's daemon runs, without starting it: its pid, version, home, socket,
uptime and the number of agent runs (processes) it holds. Exits 0 either way; --json has
"running".`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			home, err := f.ResolveHome()
			if err != nil {
				return err
			}
			st, err := daemonclient.Probe(c.Context(), home)
			if err != nil {
				return err
			}
			if f.JSON {
				return f.printJSON(st)
			}
			printDaemonStatus(f, st)
			return nil
		},
	}
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
		fmt.Fprintf(f.IO.Out, "agents:   %d running\n", st.LiveRuns)
	}
	fmt.Fprintf(f.IO.Out, "home:     %s\nsocket:   %s\n", st.Home, st.Socket)
}

func newCmdDaemonStop(f *Factory) *cobra.Command {
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "stop [--timeout D]",
		Short: "Stop the daemon as SIGTERM does, and wait until it has exited",
		Long: `Stop the home's daemon the way SIGTERM does: its agents are stopped and their sessions
marked interrupted. Returns once the daemon has exited, or fails after --timeout naming its
pid. With no daemon running it says so and exits 0.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			home, err := f.ResolveHome()
			if err != nil {
				return err
			}
			res, err := daemonclient.Stop(c.Context(), home, timeout)
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
		},
	}
	c.Flags().DurationVar(&timeout, "timeout", daemonclient.DefaultStopTimeout, "how long to wait for the daemon to exit")
	return c
}

func newCmdDaemonRestart(f *Factory) *cobra.Command {
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "restart [--timeout D]",
		Short: "Stop the daemon (if it runs) and start it again in the background",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			home, err := f.ResolveHome()
			if err != nil {
				return err
			}
			res, err := daemonclient.Stop(c.Context(), home, timeout)
			if err != nil {
				return err
			}
			client, err := daemonclient.Connect(c.Context(), home, f.Executable)
			if err != nil {
				return err
			}
			client.Close()
			st, err := daemonclient.Probe(c.Context(), home)
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
		},
	}
	c.Flags().DurationVar(&timeout, "timeout", daemonclient.DefaultStopTimeout, "how long to wait for the old daemon to exit")
	return c
}
