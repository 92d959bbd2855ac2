package cmd

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/daemon"
	"github.com/kandev/kandev/core/mockagent"
	"github.com/kandev/kandev/store"
)

// --- profile ----------------------------------------------------------------

// NewCmdProfile groups the profile verbs.
func NewCmdProfile(f *Factory) *cobra.Command {
	c := group("profile", "Manage agent profiles", "")
	c.AddCommand(newCmdProfileAdd(f), newCmdProfileList(f), newCmdProfileShow(f), newCmdProfileRemove(f))
	return c
}

func newCmdProfileAdd(f *Factory) *cobra.Command {
	var p core.Profile
	var noMCP bool
	c := &cobra.Command{
		Use:   "add NAME --command CMD [--arg A]... [--env K=V]... [--no-mcp] [--start-timeout D]",
		Short: "Add (or replace) an agent profile",
		Example: `  kandev profile add claude-opus --command claude-agent-acp --env ANTHROPIC_MODEL=opus
  kandev profile add plain --command my-agent --no-mcp
  kandev profile add opencode --command opencode --arg acp --start-timeout 3m`,
		Args: exactArgs(1, "the profile NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			p.Name = args[0]
			p.MCP = !noMCP
			if strings.TrimSpace(p.Command) == "" {
				return usagef("--command is required")
			}
			client, err := f.Client(c.Context())
			if err != nil {
				return err
			}
			saved, err := client.AddProfile(c.Context(), p)
			if err != nil {
				return err
			}
			if f.JSON {
				return f.printJSON(saved)
			}
			fmt.Fprintf(f.IO.ErrOut, "Saved profile %s (%s)\n", saved.Name, saved.Source)
			return nil
		},
	}
	c.Flags().StringVar(&p.Command, "command", "", "the ACP agent executable")
	c.Flags().StringArrayVar(&p.Args, "arg", nil, "an argument (repeat)")
	c.Flags().StringArrayVar(&p.Env, "env", nil, "an environment entry KEY=VALUE (repeat)")
	c.Flags().BoolVar(&noMCP, "no-mcp", false, "the agent cannot take an injected MCP server (no autopilot)")
	c.Flags().StringVar(&p.StartTimeout, "start-timeout", "", "how long the agent may take to start (e.g. 3m); default: the daemon's (60s)")
	return c
}

func newCmdProfileList(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List profiles",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			client, err := f.Client(c.Context())
			if err != nil {
				return err
			}
			ps, err := client.ListProfiles(c.Context())
			if err != nil {
				return err
			}
			if f.JSON {
				return f.printJSON(ps)
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tMCP\tSOURCE\tCOMMAND")
			for _, p := range ps {
				fmt.Fprintf(tw, "%s\t%v\t%s\t%s\n", p.Name, p.MCP, p.Source, p.CommandLine())
			}
			return tw.Flush()
		},
	}
}

func newCmdProfileShow(f *Factory) *cobra.Command {
	var reveal bool
	c := &cobra.Command{
		Use:   "show NAME [--reveal]",
		Short: "Show one profile (secret-looking env values masked)",
		Long: `Show one profile. The values of env entries whose names look secret (containing KEY,
TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL, AUTH or PRIVATE, in any case) print as
**** (with their last 4 characters when long), in --json too, unless --reveal.`,
		Args: exactArgs(1, "the profile NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			client, err := f.Client(c.Context())
			if err != nil {
				return err
			}
			p, err := client.GetProfile(c.Context(), args[0])
			if err != nil {
				return err
			}
			if !reveal {
				p.Env = maskEnv(p.Env)
			}
			if f.JSON {
				return f.printJSON(p)
			}
			fmt.Fprintf(f.IO.Out, "name:     %s\nsource:   %s\ncommand:  %s\nmcp:      %v\n", p.Name, p.Source, p.CommandLine(), p.MCP)
			for _, e := range p.Env {
				fmt.Fprintf(f.IO.Out, "env:      %s\n", e)
			}
			if p.StartTimeout != "" {
				fmt.Fprintf(f.IO.Out, "start:    %s\n", p.StartTimeout)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&reveal, "reveal", false, "print secret-looking env values in clear")
	return c
}

// secretWords mark an env name whose value should not reach a screen or a
// pasted bug report. Masking a harmless value by mistake costs a --reveal;
// missing a key costs the key.
var secretWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "PRIVATE"}

// maskEnv returns env with the values of secret-looking names masked: ****,
// and the last 4 characters of a value long enough that they give nothing
// useful away (they tell two keys apart).
func maskEnv(env []string) []string {
	if env == nil {
		return nil
	}
	out := make([]string, len(env))
	for i, e := range env {
		out[i] = e
		name, val, ok := strings.Cut(e, "=")
		if !ok || val == "" || !secretName(name) {
			continue
		}
		masked := "****"
		if r := []rune(val); len(r) >= 16 {
			masked += string(r[len(r)-4:])
		}
		out[i] = name + "=" + masked
	}
	return out
}

func secretName(name string) bool {
	up := strings.ToUpper(name)
	for _, w := range secretWords {
		if strings.Contains(up, w) {
			return true
		}
	}
	return false
}

func newCmdProfileRemove(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a user profile (an override's built-in comes back)",
		Args:  exactArgs(1, "the profile NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			client, err := f.Client(c.Context())
			if err != nil {
				return err
			}
			p, err := client.RemoveProfile(c.Context(), args[0])
			if err != nil {
				return err
			}
			if f.JSON {
				return f.printJSON(p)
			}
			fmt.Fprintf(f.IO.ErrOut, "Removed profile %s\n", p.Name)
			return nil
		},
	}
}

// --- serve ------------------------------------------------------------------

// ServeOptions are `serve`'s inputs.
type ServeOptions struct {
	F          *Factory
	Background bool
	NoResume   bool
}

// NewCmdServe builds `kandev serve`.
func NewCmdServe(f *Factory, runF func(*ServeOptions) error) *cobra.Command {
	opts := &ServeOptions{F: f}
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the kandev daemon in the foreground",
		Long: `Run the kandev daemon in the foreground (for systemd and the like). Clients start it in
the background on their own when it is not running. SIGTERM or Ctrl-C stops it cleanly:
agents are stopped and their sessions marked interrupted.

On start, a run that the last daemon's exit (a stop, a shutdown or a crash) cut short
resumes by itself: its agent's session is resumed and the cut prompt delivered again.
With --no-resume (or KANDEV_NO_RESUME=1 in the environment, which a daemon a client
starts inherits) such tasks are marked interrupted and wait for kandev task start or a
message.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			home, err := f.ResolveHome()
			if err != nil {
				return err
			}
			level := slog.LevelInfo
			if os.Getenv("KANDEV_DEBUG") != "" {
				level = slog.LevelDebug
			}
			log := slog.New(slog.NewTextHandler(f.IO.ErrOut, &slog.HandlerOptions{Level: level}))
			noResume := opts.NoResume || envFlagOn(os.Getenv("KANDEV_NO_RESUME"))
			return daemon.Serve(c.Context(), daemon.ServeOptions{Home: home, Version: Version, Logger: log, SelfExe: f.Executable,
				NoResume: noResume})
		},
	}
	c.Flags().BoolVar(&opts.Background, "background", false, "started by a client (logs go to the home's daemon.log)")
	_ = c.Flags().MarkHidden("background")
	c.Flags().BoolVar(&opts.NoResume, "no-resume", false, "leave runs the last daemon's exit cut short for an explicit start (env KANDEV_NO_RESUME=1)")
	return c
}

// envFlagOn reads a boolean switch from the environment: set and not "0" or
// "false".
func envFlagOn(v string) bool {
	return v != "" && v != "0" && !strings.EqualFold(v, "false")
}

// --- events -----------------------------------------------------------------

// EventsOptions are `events`' inputs.
type EventsOptions struct {
	F      *Factory
	TaskID string
}

// NewCmdEvents builds `kandev events`.
func NewCmdEvents(f *Factory, runF func(*EventsOptions) error) *cobra.Command {
	opts := &EventsOptions{F: f}
	c := &cobra.Command{
		Use:   "events",
		Short: "Tail the daemon's event stream",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			client, err := f.Client(c.Context())
			if err != nil {
				return err
			}
			ch, err := client.Events(c.Context(), core.EventsInput{TaskID: opts.TaskID})
			if err != nil {
				return err
			}
			for ev := range ch {
				if f.JSON {
					if err := f.printJSONLine(f.IO.Out, ev); err != nil {
						return err
					}
					continue
				}
				fmt.Fprintln(f.IO.Out, describeEvent(ev))
			}
			if c.Context().Err() == nil {
				return core.Errorf(core.CodeUnavailable, "the daemon closed the event stream")
			}
			return nil
		},
	}
	c.Flags().StringVar(&opts.TaskID, "task", "", "only this task's events")
	return c
}

func describeEvent(ev core.Event) string {
	s := fmt.Sprintf("%6d %s %-16s", ev.Seq, ev.At.Local().Format("15:04:05.000"), ev.Type)
	switch {
	case ev.Task != nil:
		s += fmt.Sprintf(" %s %s %q", ev.Task.ID, ev.Task.Status, truncate(ev.Task.Title, 50))
	case ev.Session != nil:
		s += fmt.Sprintf(" %s session %s %s", ev.TaskID, ev.Session.ID, ev.Session.State)
	case ev.Message != nil:
		s += fmt.Sprintf(" %s #%d %s %q", ev.TaskID, ev.Message.Seq, ev.Message.Kind, truncate(strings.ReplaceAll(ev.Message.Text, "\n", " "), 60))
	case ev.Question != nil:
		s += fmt.Sprintf(" %s question %s %s", ev.TaskID, ev.Question.ID, ev.Question.Status)
	case ev.Profile != nil:
		s += " profile " + ev.Profile.Name
	}
	return s
}

// --- version ----------------------------------------------------------------

// NewCmdVersion builds `kandev version`.
func NewCmdVersion(f *Factory, runF func(*Factory) error) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print kandev's version",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(f)
			}
			v := core.VersionInfo{Version: Version, SchemaVersion: schemaVersion()}
			if f.JSON {
				return f.printJSON(v)
			}
			fmt.Fprintf(f.IO.Out, "kandev %s (schema %d)\n", v.Version, v.SchemaVersion)
			return nil
		},
	}
}

// --- mock agent ---------------------------------------------------------------

// NewCmdMockAgent builds the hidden `kandev mock-agent`: the scripted ACP
// agent behind the built-in mock profile.
func NewCmdMockAgent(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:         "mock-agent",
		Short:       "Run the scripted mock ACP agent (used by tests and the demo)",
		Hidden:      true,
		Annotations: map[string]string{rawStreams: "1"},
		Args:        cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return mockagent.Run(context.WithoutCancel(c.Context()), f.IO.In, f.IO.Out, f.IO.ErrOut, f.Getenv)
		},
	}
}

func schemaVersion() int { return store.SchemaVersion() }
