// Package tui is kandev's terminal UI: the live tree of tasks, the
// selected task's conversation, and the operator's actions (new task,
// answer, message, stop, start, archive). It speaks to the daemon only
// through core.Client and follows its event stream; it never polls.
package tui

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/term"
	"github.com/muesli/termenv"

	"github.com/kandev/kandev/core"
)

// Options configure Run. The zero value works.
type Options struct {
	// Reconnect returns a client when the event stream has ended (the
	// daemon stopped or restarted), starting the daemon if need be. Nil
	// reuses the first client.
	Reconnect func(context.Context) (core.Client, error)
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
}

// Run shows the UI until the operator quits or ctx ends.
func Run(ctx context.Context, client core.Client, opts Options) error {
	if opts.In == nil {
		opts.In = os.Stdin
	}
	if opts.Out == nil {
		opts.Out = os.Stdout
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
// Nothing here asks the terminal anything: the background is taken from
// COLORFGBG (dark when unset) for this renderer and for lipgloss's default
// one (bubbles' adaptive colours), since a terminal that never answers a
// query would otherwise hold the start for termenv's 5 s timeout, and a
// query sent once bubbletea owns the input would eat its answer.
func terminalStyles(out io.Writer, noColor bool) styles {
	r := lipgloss.NewRenderer(out)
	dark := darkBackground(os.Getenv("COLORFGBG"))
	r.SetHasDarkBackground(dark)
	lipgloss.SetHasDarkBackground(dark)
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

// darkBackground reads COLORFGBG ("fg;bg", rxvt's convention, also set by
// Konsole and others): background colours 7 and 9–15 are light.
func darkBackground(colorfgbg string) bool {
	i := strings.LastIndexByte(colorfgbg, ';')
	if i < 0 {
		return true
	}
	bg, err := strconv.Atoi(colorfgbg[i+1:])
	if err != nil {
		return true
	}
	return !(bg == 7 || (bg >= 9 && bg <= 15))
}
