package cmd

import (
	"context"
	"os"
	"sync"

	"github.com/charmbracelet/x/term"

	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemonclient"
	"github.com/kandev/kandev/tui"
)

// runTUI is `kandev` with no arguments: connect (starting the daemon if
// needed) and open the terminal UI.
func runTUI(ctx context.Context, f *Factory) error {
	if !isTerminal(f.IO.In) || !isTerminal(f.IO.Out) {
		return usagef("kandev's UI needs a terminal; for scripts use the commands (kandev task list --json, kandev --help)")
	}
	// Which runs a daemon started here resumed is said on the UI's status
	// line: stderr would be under its screen.
	f.quietResumed = true
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	home, err := f.ResolveHome()
	if err != nil {
		return err
	}
	cwd, _ := os.Getwd()
	var (
		mu     sync.Mutex
		notice string // what the daemon R started resumed, until said
	)
	return tui.Run(ctx, client, tui.Options{
		CWD:    cwd,
		Notice: f.resumedNotice,
		In:     f.IO.In,
		Out:    f.IO.Out,
		Reconnect: func(ctx context.Context) (api.Client, error) {
			c, err := daemonclient.Connect(ctx, home, f.Executable)
			if err == nil && c.StartedHere() {
				if v, verr := c.Version(ctx); verr == nil && len(v.Resumed) > 0 {
					mu.Lock()
					notice = resumedNotice(v)
					mu.Unlock()
				}
			}
			return c, err
		},
		TakeNotice: func() string {
			mu.Lock()
			defer mu.Unlock()
			n := notice
			notice = ""
			return n
		},
		// Reconnecting by itself, the UI never starts a daemon: one that
		// was stopped on purpose stays stopped until the operator says.
		Attach: func(ctx context.Context) (api.Client, error) {
			if c, ok := daemonclient.Ping(ctx, home); ok {
				return c, nil
			}
			return nil, tui.ErrNoDaemon
		},
	})
}

func isTerminal(v any) bool {
	file, ok := v.(*os.File)
	return ok && term.IsTerminal(file.Fd())
}
