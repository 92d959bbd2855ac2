package core

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Home is a kandev home directory and the files kandev keeps in it.
type Home struct{ Dir string }

// ResolveHome picks the home: the flag, else $KANDEV_HOME, else
// $XDG_DATA_HOME/kandev, else ~/.local/share/kandev.
func ResolveHome(flag string) (Home, error) {
	dir := flag
	if dir == "" {
		dir = os.Getenv("KANDEV_HOME")
	}
	if dir == "" {
		if x := os.Getenv("XDG_DATA_HOME"); x != "" {
			dir = filepath.Join(x, "kandev")
		}
	}
	if dir == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return Home{}, fmt.Errorf("find kandev home: set --home or KANDEV_HOME: %w", err)
		}
		dir = filepath.Join(h, ".local", "share", "kandev")
	}
	abs, err := RealPath(dir)
	if err != nil {
		return Home{}, fmt.Errorf("kandev home %s: %w", dir, err)
	}
	return Home{Dir: abs}, nil
}

// RealPath is the one spelling kandev stores and compares a path in
// (ADR 0042): absolute, cleaned, every symbolic link resolved. A path that
// does not exist yet keeps its missing tail after its longest existing
// prefix is resolved, so a home made later gets the same spelling as one
// resolved once it exists. Two spellings of one place (a link to the home,
// a home reached through a linked parent) are then equal as strings.
func RealPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	var tail []string
	cur := abs
	for {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(append([]string{real}, tail...)...), nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs, nil
		}
		tail = append([]string{filepath.Base(cur)}, tail...)
		cur = parent
	}
}

// Ensure creates the home with mode 0700 and tightens an existing one: the
// socket inside grants full control of every agent.
func (h Home) Ensure() error {
	if err := os.MkdirAll(h.Dir, 0o700); err != nil {
		return fmt.Errorf("create kandev home %s: %w", h.Dir, err)
	}
	if err := os.Chmod(h.Dir, 0o700); err != nil {
		return fmt.Errorf("secure kandev home %s: %w", h.Dir, err)
	}
	for _, d := range []string{h.LogDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	return nil
}

// DB is the SQLite database.
func (h Home) DB() string { return filepath.Join(h.Dir, "kandev.db") }

// Socket is the daemon's unix socket.
func (h Home) Socket() string { return filepath.Join(h.Dir, "kandev.sock") }

// MCPSocket is the agents' socket: it serves only the token-authenticated
// MCP calls of `kandev mcp`, never the operator's routes.
func (h Home) MCPSocket() string { return filepath.Join(h.Dir, "mcp.sock") }

// Lock is the file the daemon holds locked while it runs.
func (h Home) Lock() string { return filepath.Join(h.Dir, "daemon.lock") }

// DaemonLog is where a background daemon writes its log.
func (h Home) DaemonLog() string { return filepath.Join(h.Dir, "daemon.log") }

// LogDir holds one stderr log per agent session.
func (h Home) LogDir() string { return filepath.Join(h.Dir, "logs") }

// SessionLog is the stderr log of one agent session.
func (h Home) SessionLog(sessionID string) string {
	return filepath.Join(h.LogDir(), sessionID+".log")
}
