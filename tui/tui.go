// Package tui is kandev's terminal UI: the live tree of tasks, the
// selected task's conversation, and the operator's actions (new task,
// answer, message, stop, start, archive). It speaks to the daemon only
// through api.Client and follows its event stream; it never polls.
package tui

import (
	"cmp"
	"context"
	"errors"
	"io"
	"os"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/term"
	"github.com/kandev/kandev/core/api"
	"github.com/muesli/termenv"
)

// Options configure Run. The zero value works.
type Options struct {
	// Reconnect returns a client when the event stream has ended (the
	// daemon stopped or restarted), starting the daemon if need be. Nil
	// reuses the first client.
	Reconnect func(context.Context) (api.Client, error)
	// Attach, when set, is how the UI reconnects by itself: it finds a
	// running daemon and never starts one, failing with ErrNoDaemon when
	// none answers. A daemon someone stopped (kandev daemon stop) then
	// stays stopped: the UI says so and Reconnect runs only when the
	// operator asks for it (R).
	Attach func(context.Context) (api.Client, error)
	// Notice is said once on the status line at start, for noticeFor:
	// which interrupted runs the daemon the UI started resumed.
	Notice string
	// TakeNotice, when set, is asked after a reconnect for what the daemon
	// Reconnect started resumed ("" for nothing); it is said once.
	TakeNotice func() string
	// CWD is the working directory of tasks created from the UI.
	CWD string
	// In and Out default to the process's stdin and stdout.
	In  io.Reader
	Out io.Writer
	// NoColor forces monochrome, as NO_COLOR in the environment does.
	NoColor bool
	// Now and Location fix the clock and time zone (tests).
	Now      func() time.Time
	Location *time.Location
	// Bell is where the terminal bell goes when a task starts needing you
	// (default Out); NoBell, or KANDEV_NO_BELL=1, silences it.
	Bell   io.Writer
	NoBell bool
	// Shell and Editor are what S and e run in a task's directory (a
	// command line, split at spaces; the editor is given "."). Run sets
	// them from $SHELL, and $VISUAL or $EDITOR, else /bin/sh and vi.
	Shell, Editor string
}

// ErrNoDaemon is Attach's answer when no daemon runs in the home.
var ErrNoDaemon = errors.New("no kandev daemon is running")

// Run shows the UI until the operator quits or ctx ends.
func Run(ctx context.Context, client api.Client, opts Options) error {
	if opts.In == nil {
		opts.In = os.Stdin
	}
	if opts.Out == nil {
		opts.Out = os.Stdout
	}
	if opts.Bell == nil {
		opts.Bell = opts.Out
	}
	if os.Getenv("KANDEV_NO_BELL") == "1" {
		opts.NoBell = true
	}
	if opts.Shell == "" {
		opts.Shell = os.Getenv("SHELL")
	}
	if opts.Editor == "" {
		opts.Editor = cmp.Or(os.Getenv("VISUAL"), os.Getenv("EDITOR"))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := newModel(ctx, client, opts, terminalStyles(opts.Out, opts.NoColor || os.Getenv("NO_COLOR") != ""))
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(opts.In), tea.WithOutput(opts.Out), tea.WithAltScreen())
	_, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // ended by a signal or the caller
	}
	return err
}

// terminalStyles picks colors for out. With NO_COLOR on a terminal, the
// styles keep reverse, bold and faint (which are not color) so the
// selection and the input cursor stay visible.
//
// The background is what lipgloss's default renderer settled on during
// bubbletea's init: without asking the terminal (the kandev binary keeps
// package inits from querying, cmd/kandev/internal/quietinit), termenv
// takes COLORFGBG, else dark. This renderer is told, not left to ask: a
// query that goes unanswered waits 5 s, and one sent once bubbletea owns
// the input would eat its answer. kandev's styles do not depend on it.
// See docs/decisions/0036-no-terminal-query-at-start.md.
func terminalStyles(out io.Writer, noColor bool) styles {
	r := lipgloss.NewRenderer(out)
	r.SetHasDarkBackground(lipgloss.HasDarkBackground())
	if noColor {
		if f, ok := out.(*os.File); ok && term.IsTerminal(f.Fd()) {
			r.SetColorProfile(termenv.ANSI)
		} else {
			r.SetColorProfile(termenv.Ascii)
		}
		return newStyles(r, false)
	}
	return newStyles(r, r.ColorProfile() != termenv.Ascii)
}
