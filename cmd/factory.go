// Package cmd holds kandev's cobra commands. Commands are thin: parse
// flags, call core through one client, print text or --json. Data goes to
// stdout; status and errors go to stderr.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/config"
	"github.com/kandev/kandev/core/daemonclient"
	"github.com/kandev/kandev/core/textsafe"
)

// Version is set at build time (-ldflags "-X github.com/kandev/kandev/cmd.Version=...").
var Version = "dev"

// IOStreams are the process's standard streams.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// OutTTY: stdout is a terminal (--json is indented for a person).
	OutTTY bool
	// InTTY: stdin is a terminal, so a command may ask a question (no
	// question is ever asked without one).
	InTTY bool
}

// Factory carries what every command needs, built once per process.
type Factory struct {
	IO   IOStreams
	Home string // --home
	JSON bool   // --json
	// Executable is the kandev binary (it starts the daemon).
	Executable string
	Getenv     func(string) string

	mu     sync.Mutex
	client api.Client
	// slowAfter replaces slowDaemon's 5s in tests.
	slowAfter time.Duration
	// cleaners hold the text-mode stream wrappers, flushed at exit.
	cleaners []*textsafe.Writer
	// rawOut is stdout before cleaning: a command that cleans its text
	// itself writes its own colours there (task diff on a terminal).
	rawOut io.Writer
	// resumedNotice says which runs the daemon this process started
	// resumed ("" when it started none, or none resumed); quietResumed
	// keeps it off stderr for a front end that shows it itself (the TUI).
	resumedNotice string
	quietResumed  bool
}

// resumedNotice names the runs a daemon resumed by itself at its start.
func resumedNotice(v api.VersionInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "started the kandev daemon (pid %d); it resumed %d interrupted %s:", v.PID, len(v.Resumed), plural(len(v.Resumed), "run", "runs"))
	for i, r := range v.Resumed {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(" " + r.TaskID)
		if r.Title != "" {
			fmt.Fprintf(&b, " %q", truncate(r.Title, 40))
		}
	}
	b.WriteString(" (kandev daemon stop halts them)")
	return b.String()
}

// rawStreams is the annotation of a command whose streams carry a
// protocol or a full screen (the TUI, kandev mcp, the mock agent): they
// are never cleaned.
const rawStreams = "kandev/raw-streams"

// cleanText makes every text a command writes safe for a terminal: titles,
// agent output and error messages are untrusted, and an escape sequence in
// them (OSC 52 clipboard writes, window titles, links, cursor moves) must
// not reach the terminal. --json output stays byte-exact: JSON escapes C0
// controls itself and a consumer wants the data as stored.
func (f *Factory) cleanText(c *cobra.Command) {
	if f.JSON || c.Annotations[rawStreams] != "" || f.cleaners != nil {
		return
	}
	f.rawOut = f.IO.Out
	out, errOut := textsafe.NewWriter(f.IO.Out), textsafe.NewWriter(f.IO.ErrOut)
	f.IO.Out, f.IO.ErrOut = out, errOut
	f.cleaners = []*textsafe.Writer{out, errOut}
}

// flushText writes what the text cleaners still hold.
func (f *Factory) flushText() {
	for _, w := range f.cleaners {
		_ = w.Flush()
	}
}

// NewFactory builds the factory for the running process.
func NewFactory() *Factory {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return &Factory{IO: IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, OutTTY: isTerminal(os.Stdout), InTTY: isTerminal(os.Stdin)},
		Executable: exe, Getenv: os.Getenv}
}

// ResolveHome applies --home, $KANDEV_HOME, $XDG_DATA_HOME.
func (f *Factory) ResolveHome() (core.Home, error) {
	return core.ResolveHome(f.Home)
}

// Client connects to the home's daemon, starting it if needed: the
// connection of a command that changes work. A daemon it starts that
// resumes interrupted runs is said on stderr, once, naming them. Commands
// see only api.Client: what they need beyond it they ask for by interface.
func (f *Factory) Client(ctx context.Context) (api.Client, error) {
	return f.connect(ctx, true)
}

// ReadClient connects to the home's daemon and never starts one: the
// connection of every command that only reads (ADR 0072). With no daemon
// the error says so and how to start it.
func (f *Factory) ReadClient(ctx context.Context) (api.Client, error) {
	return f.connect(ctx, false)
}

func (f *Factory) connect(ctx context.Context, start bool) (api.Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.client != nil {
		return f.client, nil
	}
	home, err := f.ResolveHome()
	if err != nil {
		return nil, err
	}
	var c *daemonclient.Client
	if start {
		c, err = daemonclient.Connect(ctx, home, f.Executable)
	} else {
		c, err = daemonclient.ConnectRunning(ctx, home)
	}
	if err != nil {
		return nil, err
	}
	if c.StartedHere() {
		if v, err := c.Version(ctx); err == nil && len(v.Resumed) > 0 {
			f.resumedNotice = resumedNotice(v)
			if !f.quietResumed {
				fmt.Fprintln(f.IO.ErrOut, "kandev: "+f.resumedNotice)
			}
		}
	}
	errOut := f.IO.ErrOut
	c.OnSlow(f.slowDaemon(), func(waited time.Duration) {
		fmt.Fprintf(errOut, "kandev: the daemon has not answered for %s; still waiting (Ctrl-C gives up; its log: %s)\n",
			waited, home.DaemonLog())
	})
	f.client = c
	return c, nil
}

// slowDaemon is how long a command waits for the daemon's answer before
// it says it is waiting: 5s, or a test's own.
func (f *Factory) slowDaemon() time.Duration {
	if f.slowAfter > 0 {
		return f.slowAfter
	}
	return 5 * time.Second
}

// configuredProfile is the default profile a person set: $KANDEV_PROFILE,
// else config.toml's profile, else "" (then the daemon gives a child its
// parent's, and task create picks one for a top-level task).
func (f *Factory) configuredProfile() (string, error) {
	cfg, err := config.Load(f.Getenv)
	if err != nil {
		return "", err
	}
	v, err := cfg.Get("profile")
	if err != nil {
		return "", err
	}
	return v.Value, nil
}

// configuredWorkspace is the workspace key's value for a top-level task
// created without --workspace: "" for auto (the daemon's own choice), else
// worktree or shared.
func (f *Factory) configuredWorkspace() (string, error) {
	cfg, err := config.Load(f.Getenv)
	if err != nil {
		return "", err
	}
	v, err := cfg.Get("workspace")
	if err != nil || v.Value == "auto" {
		return "", err
	}
	return v.Value, nil
}

// UsageError marks a mistake in how a command was invoked (exit code 2).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// ExitCode maps an error to the process exit code: 0 success, 1 failure,
// 2 usage error.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ue *UsageError
	if errors.As(err, &ue) {
		return 2
	}
	var we *WaitExit
	if errors.As(err, &we) {
		return we.Code
	}
	var se *ShellExit
	if errors.As(err, &se) {
		return se.Code
	}
	return 1
}
