// Package quietinit keeps package initialisation from querying the
// terminal. bubbletea v1 asks lipgloss for the terminal's background in its
// init (tea_init.go): termenv sends OSC 11 and a cursor-position query and
// waits up to 5 s for the answers, so a terminal that never answers (a bare
// pty, some CI and hook runners) held every kandev command, the TUI
// included, for 5 s, and one that answers late got the reply as typed junk.
//
// termenv sends no query when TERM is dumb, screen or tmux (it falls back to
// COLORFGBG, else a dark background). This package sets TERM=dumb in its
// init and the command's main restores it first thing (Restore), so the
// query is never sent and nothing else sees the changed TERM.
//
// Why this runs before bubbletea's init: since Go 1.21 the specification
// fixes the order: "Given the list of all packages, sorted by import path,
// in each step the first uninitialized package in the list for which all
// imports (if any) are already initialized is initialized." This package
// imports only os, which termenv imports too, and its path sorts before
// github.com/muesli/termenv, so it is ready, and first in line, whenever
// termenv is; lipgloss and bubbletea come after termenv. The TUI tests in a
// pty that never answers (tui TestTUISilentTerminal) fail if that
// ever stops holding. See docs/decisions/0036-no-terminal-query-at-start.md.
package quietinit

import "os"

// saved is TERM as the process received it; changed says init replaced it.
var (
	saved, had, changed = "", false, false
)

func init() {
	v, ok := os.LookupEnv("TERM")
	if ok && (v == "dumb" || len(v) >= 6 && v[:6] == "screen" || len(v) >= 4 && v[:4] == "tmux") {
		return // termenv sends nothing for these already
	}
	if os.Setenv("TERM", "dumb") != nil {
		return
	}
	saved, had, changed = v, ok, true
}

// Restore puts TERM back as the process received it. main calls it before
// anything else, so commands, the TUI and agents' processes see the real
// TERM.
func Restore() {
	if !changed {
		return
	}
	changed = false
	if had {
		_ = os.Setenv("TERM", saved)
	} else {
		_ = os.Unsetenv("TERM")
	}
}
