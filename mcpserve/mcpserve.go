// Package mcpserve is `kandev mcp`: the stdio MCP server every agent is
// given. It is a thin bridge: it asks the daemon which tools its session
// token may see, registers exactly those (schemas and annotations from the
// capability registry), and forwards each call to the daemon with the
// token. The daemon derives the caller from the token alone.
//
// Without a token it serves the external surface, for an agent CLI a person
// runs by hand; it then finds (or starts) the daemon of the kandev home.
//
// Stdout carries JSON-RPC only. Diagnostics go to stderr, and only when
// KANDEV_MCP_DEBUG is set.
package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemonclient"
)

// Environment variables the bridge reads.
const (
	// EnvSocket is the daemon's socket (set by the daemon for its agents:
	// the agents' socket, which serves only token-authenticated MCP calls).
	EnvSocket = "KANDEV_SOCKET"
	// EnvToken is the agent session's token (set by the daemon). Without it
	// the bridge serves the external surface.
	EnvToken = "KANDEV_TOKEN"
	// EnvDebug, when non-empty, sends diagnostics to stderr.
	EnvDebug = "KANDEV_MCP_DEBUG"
	// EnvProgressInterval (a Go duration) sets how often a waiting tool
	// call reports progress; default 10s, at most 15s.
	EnvProgressInterval = "KANDEV_MCP_PROGRESS_INTERVAL"
)

// Progress intervals for tools that wait for a person.
const (
	DefaultProgressInterval = 10 * time.Second
	MaxProgressInterval     = 15 * time.Second
)

// Option adjusts Run.
type Option func(*options)

type options struct {
	home    string
	exe     string
	version string
	stderr  io.Writer
	host    api.ToolHost
	maxMsg  int
}

// WithHome sets the kandev home (the --home flag) used to find the daemon
// for the external surface. Default: $KANDEV_HOME, $XDG_DATA_HOME/kandev,
// ~/.local/share/kandev.
func WithHome(dir string) Option { return func(o *options) { o.home = dir } }

// WithExecutable names the kandev binary that starts a daemon when the
// external surface finds none running.
func WithExecutable(exe string) Option { return func(o *options) { o.exe = exe } }

// WithVersion sets the version the server reports in initialize.
func WithVersion(v string) Option { return func(o *options) { o.version = v } }

// WithStderr sets where diagnostics go (only with KANDEV_MCP_DEBUG).
func WithStderr(w io.Writer) Option { return func(o *options) { o.stderr = w } }

// WithHost serves the tools of host instead of dialing a daemon (tests).
func WithHost(h api.ToolHost) Option { return func(o *options) { o.host = h } }

// Run serves MCP on in/out until in reaches EOF (it then returns nil) or
// ctx ends. It fails before reading anything when the daemon cannot be
// reached or refuses the token.
func Run(ctx context.Context, in io.Reader, out io.Writer, getenv func(string) string, opts ...Option) error {
	o := options{version: "dev", stderr: os.Stderr, maxMsg: MaxMessage}
	for _, f := range opts {
		f(&o)
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	log := slog.New(slog.DiscardHandler)
	if getenv(EnvDebug) != "" {
		log = slog.New(slog.NewTextHandler(o.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}

	host := o.host
	if host == nil {
		c, err := connect(ctx, getenv, o)
		if err != nil {
			return err
		}
		defer c.Close()
		host = c
	}
	surface, err := host.ToolSurface(ctx)
	if err != nil {
		return refused(err, getenv(EnvToken) != "")
	}
	log.Debug("kandev mcp: surface", "surface", surface.Surface, "groups", surface.Groups, "task", surface.TaskID,
		"session", surface.SessionID, "tools", surface.Tools)

	b := newBridge(host, surface, o.version, progressInterval(getenv(EnvProgressInterval)), log)
	return b.serve(ctx, in, out, o.maxMsg)
}

// connect dials the daemon: the token's daemon at KANDEV_SOCKET, or for
// the external surface the home's daemon, started in the background when
// none answers.
func connect(ctx context.Context, getenv func(string) string, o options) (*daemonclient.Client, error) {
	token, socket := getenv(EnvToken), getenv(EnvSocket)
	if socket == "" {
		home, err := resolveHome(o.home, getenv)
		if err != nil {
			return nil, err
		}
		if token == "" {
			exe := o.exe
			if exe == "" {
				if exe, err = os.Executable(); err != nil {
					return nil, fmt.Errorf("find the kandev executable to start the daemon: %w", err)
				}
			}
			c, err := daemonclient.Connect(ctx, home, exe)
			if err != nil {
				return nil, fmt.Errorf("mcp: %w", err)
			}
			return c, nil
		}
		// A token belongs to a running daemon: never start one for it.
		socket = home.Socket()
	}
	c := daemonclient.Dial(socket)
	if token != "" {
		c = c.WithToken(token)
	}
	return c, nil
}

// resolveHome follows core.ResolveHome's order, reading the environment
// through getenv.
func resolveHome(flag string, getenv func(string) string) (core.Home, error) {
	dir := flag
	if dir == "" {
		dir = getenv("KANDEV_HOME")
	}
	if dir == "" {
		if x := getenv("XDG_DATA_HOME"); x != "" {
			dir = filepath.Join(x, "kandev")
		}
	}
	if dir == "" {
		h := getenv("HOME")
		if h == "" {
			var err error
			if h, err = os.UserHomeDir(); err != nil {
				return core.Home{}, fmt.Errorf("find kandev home: set --home or KANDEV_HOME: %w", err)
			}
		}
		dir = filepath.Join(h, ".local", "share", "kandev")
	}
	return core.ResolveHome(dir)
}

// refused explains why the bridge cannot start.
func refused(err error, withToken bool) error {
	ce := core.AsError(err)
	if errors.Is(err, context.Canceled) {
		return err
	}
	switch {
	case ce.Code == core.CodeForbidden && withToken:
		return fmt.Errorf("mcp: the daemon refused KANDEV_TOKEN (%s: %s); a token is minted by kandev for one agent session and dies with it", ce.Code, ce.Message)
	case ce.Code == core.CodeUnavailable:
		return fmt.Errorf("mcp: %s: %s", ce.Code, ce.Message)
	}
	return fmt.Errorf("mcp: cannot get this session's tools: %s: %s", ce.Code, ce.Message)
}

// progressInterval parses EnvProgressInterval: a positive duration up to
// MaxProgressInterval, else the default.
func progressInterval(v string) time.Duration {
	if v == "" {
		return DefaultProgressInterval
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return DefaultProgressInterval
	}
	return min(d, MaxProgressInterval)
}
