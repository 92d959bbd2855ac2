package cmd

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core/daemon"
	"github.com/kandev/kandev/internal/mockagent"
)

// ServeOptions are `serve`'s inputs.
type ServeOptions struct {
	F          *Factory
	Background bool
	NoResume   bool
	Web        string
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
			return serveRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Background, "background", false, "started by a client (logs go to the home's daemon.log)")
	_ = c.Flags().MarkHidden("background")
	c.Flags().BoolVar(&opts.NoResume, "no-resume", false, "leave runs the last daemon's exit cut short for an explicit start (env KANDEV_NO_RESUME=1)")
	c.Flags().StringVar(&opts.Web, "web", "", "serve the web inbox on ADDR, such as 127.0.0.1:8421 (over web_listen; docs/web.md)")
	return c
}

func serveRun(ctx context.Context, opts *ServeOptions) error {
	f := opts.F
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
	// No collection until the daemon listens: its start allocates what it
	// keeps (each task's row, its cache entry, the maps), so collecting
	// while the heap grows only scans it again and again, a tenth of the
	// start at 100,000 tasks on a busy machine, for 3 MB more at its peak.
	// The process is the daemon's alone, so the setting is its to change.
	gc := debug.SetGCPercent(-1)
	var restore sync.Once
	collect := func() { restore.Do(func() { debug.SetGCPercent(gc) }) }
	defer collect()
	defer startProfiles()()
	return daemon.Serve(ctx, daemon.ServeOptions{Home: home, Version: Version, Logger: log, SelfExe: f.Executable,
		NoResume: noResume, Ready: collect, Web: opts.Web})
}

// envFlagOn reads a boolean switch from the environment: set and not "0" or
// "false".
func envFlagOn(v string) bool {
	return v != "" && v != "0" && !strings.EqualFold(v, "false")
}

// MockAgentOptions are `mock-agent`'s inputs.
type MockAgentOptions struct {
	F *Factory
}

// NewCmdMockAgent builds the hidden `kandev mock-agent`: the scripted ACP
// agent behind the built-in mock profile.
func NewCmdMockAgent(f *Factory, runF func(*MockAgentOptions) error) *cobra.Command {
	opts := &MockAgentOptions{F: f}
	return &cobra.Command{
		Use:         "mock-agent",
		Short:       "Run the scripted mock ACP agent (used by tests and the demo)",
		Hidden:      true,
		Annotations: map[string]string{rawStreams: "1"},
		Args:        cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return mockAgentRun(c.Context(), opts)
		},
	}
}

func mockAgentRun(ctx context.Context, opts *MockAgentOptions) error {
	f := opts.F
	// A mock agent needs no parallelism. With one P its runtime does not
	// spin idle cores between writes: fifty streaming mocks on a 2-core
	// machine otherwise keep the cores from the daemon they load.
	runtime.GOMAXPROCS(1)
	return mockagent.Run(context.WithoutCancel(ctx), f.IO.In, f.IO.Out, f.IO.ErrOut, f.Getenv)
}
