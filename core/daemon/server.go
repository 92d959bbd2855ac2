// Package daemon runs kandev's engine behind a unix socket (HTTP+JSON with
// a server-sent-events stream). Its clients live in core/daemonclient,
// which speaks the same socket without linking the engine or the store.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/config"
	"github.com/kandev/kandev/core/daemonclient"
	"github.com/kandev/kandev/core/engine"
	"github.com/kandev/kandev/store"
)

// ErrRunning: another daemon holds this home.
var ErrRunning = errors.New("a kandev daemon is already running for this home")

// ServeOptions configure a daemon.
type ServeOptions struct {
	Home    core.Home
	Version string
	Logger  *slog.Logger
	// SelfExe overrides the kandev executable agents are given.
	SelfExe string
	// Ready is called once the socket accepts connections.
	Ready func()
	Grace agent.Grace
	// NoResume leaves runs the last daemon's exit cut short for an
	// explicit start instead of resuming them at once (ADR 0026).
	NoResume bool
	// Web is the web inbox's address (serve --web), over web_listen.
	Web string
}

// Serve runs the daemon until ctx ends, then shuts down: stop taking work,
// stop agent process groups, mark their sessions interrupted, exit.
func Serve(ctx context.Context, o ServeOptions) error {
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if err := daemonclient.CheckSocketPath(o.Home.Socket()); err != nil {
		return err
	}
	if err := o.Home.Ensure(); err != nil {
		return err
	}
	unlock, err := lockHome(o.Home)
	if err != nil {
		return err
	}
	defer unlock()
	timeouts, err := loadTimeouts()
	if err != nil {
		return err
	}
	db, err := store.Open(ctx, o.Home.DB())
	if err != nil {
		return err
	}
	defer db.Close()
	eng, err := newEngine(ctx, o, db, timeouts)
	if err != nil {
		return err
	}
	ln, mcpLn, err := listenAndRecover(ctx, o.Home, eng)
	if err != nil {
		eng.Close()
		return err
	}
	web, stopWeb, err := startWeb(ctx, o, db, o.Logger)
	if err != nil {
		ln.Close()
		mcpLn.Close()
		eng.Close()
		return err
	}
	defer stopWeb()
	stopNotifier, err := startNotifier(ctx, eng, o.Logger, web.link)
	if err != nil {
		ln.Close()
		mcpLn.Close()
		eng.Close()
		return err
	}
	defer stopNotifier()
	serve(ctx, o, eng, ln, mcpLn, web)
	return nil
}

// timeouts are the agents' start and idle timeouts.
type timeouts struct{ start, idle time.Duration }

// loadTimeouts reads the timeouts from the environment, else config.toml,
// else the built-ins; a bad value stops the start with the key or
// variable named.
func loadTimeouts() (timeouts, error) {
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		return timeouts{}, err
	}
	start, err := cfg.Duration("start_timeout")
	if err != nil {
		return timeouts{}, err
	}
	idle, err := cfg.Duration("idle_timeout")
	if err != nil {
		return timeouts{}, err
	}
	return timeouts{start: start, idle: idle}, nil
}

// newEngine opens the engine over db with the daemon's options and the
// test failpoints the environment sets.
func newEngine(ctx context.Context, o ServeOptions, db *store.DB, t timeouts) (*engine.Engine, error) {
	log := o.Logger
	return engine.New(ctx, engine.Options{Home: o.Home, DB: db, SelfExe: o.SelfExe, Socket: o.Home.MCPSocket(),
		Logger: log, Version: o.Version, Grace: o.Grace, StartTimeout: t.start,
		QuestionTurnGrace: durationEnv("KANDEV_QUESTION_TURN_GRACE"), AfterTurnEnd: failpoint(log),
		DuringRecovery: recoveryFailpoint(log), BeforeStart: startFailpoint(log), IdleTimeout: t.idle,
		BeforeTeardown: teardownFailpoint(log),
		NoResume:       o.NoResume, Config: func() (config.Config, error) { return config.Load(os.Getenv) },
		SSHConfig: os.Getenv("KANDEV_SSH_CONFIG"), Clock: testClock()})
}

// testClock is the clock spend limits count windows by: test only, the
// file KANDEV_TEST_CLOCK names (its RFC 3339 time), else the wall clock.
func testClock() engine.Clock {
	if p := os.Getenv(engine.ClockFileEnv); p != "" {
		return &engine.FileClock{Path: p}
	}
	return nil
}

// listenAndRecover opens the agents' socket, recovers the runs the last
// daemon left, then opens the operator's socket. On an error it closes
// what it opened; the engine is the caller's.
func listenAndRecover(ctx context.Context, home core.Home, eng *engine.Engine) (ln, mcpLn net.Listener, err error) {
	// The agents' socket listens before recovery restarts any agent, so
	// their kandev mcp finds it (connections wait until it serves).
	mcpLn, err = listenPrivate(home.MCPSocket())
	if err != nil {
		return nil, nil, err
	}
	if err := eng.Runs.Recover(ctx); err != nil {
		mcpLn.Close()
		return nil, nil, err
	}
	// Containers of sessions that ended while no daemon ran (kill -9),
	// beside the start: asking a container engine costs it tens of ms.
	go eng.Runs.SweepContainers(ctx)
	ln, err = listenPrivate(home.Socket())
	if err != nil {
		mcpLn.Close()
		return nil, nil, err
	}
	return ln, mcpLn, nil
}

// serve answers both sockets until ctx ends or a server fails, then shuts
// down in order.
func serve(ctx context.Context, o ServeOptions, eng *engine.Engine, ln, mcpLn net.Listener, web *webState) {
	log := o.Logger
	h := NewHandler(eng, log)
	h.web = web
	srv := &http.Server{Handler: guardHome(o.Home, log, h), ReadHeaderTimeout: 10 * time.Second}
	mcpSrv := &http.Server{Handler: guardHome(o.Home, log, h.MCPOnly()), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	go func() { errc <- mcpSrv.Serve(mcpLn) }()
	log.Info("kandev daemon listening", "socket", o.Home.Socket(), "pid", os.Getpid(), "version", o.Version)
	if o.Ready != nil {
		o.Ready()
	}

	select {
	case <-ctx.Done():
	case err := <-errc:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "err", err)
		}
	}
	log.Info("kandev daemon shutting down")
	// Refuse new requests first, then end the engine (which ends the event
	// streams and the agents), then let in-flight requests finish.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go srv.Shutdown(shutdownCtx)
	go mcpSrv.Shutdown(shutdownCtx)
	eng.Close()
	srv.Close()
	mcpSrv.Close()
	_ = os.Remove(o.Home.Socket())
	_ = os.Remove(o.Home.MCPSocket())
	log.Info("kandev daemon stopped")
}

// failpoint lets tests crash the daemon at a chosen moment:
// KANDEV_FAILPOINT=exit-after-turn-end exits right after a turn's end is
// recorded, before its stall check, as a kill -9 there would.
func failpoint(log *slog.Logger) func(string) {
	if os.Getenv("KANDEV_FAILPOINT") != "exit-after-turn-end" {
		return nil
	}
	return func(taskID string) {
		log.Warn("failpoint: exiting after a turn end", "task", taskID)
		os.Exit(70)
	}
}

// recoveryFailpoint: KANDEV_FAILPOINT=exit-during-recovery:N exits inside
// the startup recovery of the N-th interrupted session (from 0), after its
// prompt is queued again and before that commits, as a kill -9 there would.
func recoveryFailpoint(log *slog.Logger) func(int) {
	arg, ok := strings.CutPrefix(os.Getenv("KANDEV_FAILPOINT"), "exit-during-recovery:")
	if !ok {
		return nil
	}
	at, err := strconv.Atoi(arg)
	if err != nil {
		return nil
	}
	return func(n int) {
		if n == at {
			log.Warn("failpoint: exiting during recovery", "session_index", n)
			os.Exit(70)
		}
	}
}

// startFailpoint: KANDEV_FAILPOINT=exit-before-start exits once a create
// with --start has committed, before the start, as a kill -9 there would.
func startFailpoint(log *slog.Logger) func(string) {
	if os.Getenv("KANDEV_FAILPOINT") != "exit-before-start" {
		return nil
	}
	return func(taskID string) {
		log.Warn("failpoint: exiting before a created task's start", "task", taskID)
		os.Exit(70)
	}
}

// teardownFailpoint: KANDEV_FAILPOINT=exit-before-teardown exits once a
// run's end is recorded, before its processes are torn down, as a kill -9
// there would: they are left running under a finished session.
func teardownFailpoint(log *slog.Logger) func(string) {
	if os.Getenv("KANDEV_FAILPOINT") != "exit-before-teardown" {
		return nil
	}
	return func(sessionID string) {
		log.Warn("failpoint: exiting before a run's teardown", "session", sessionID)
		os.Exit(70)
	}
}

func durationEnv(name string) time.Duration {
	d, _ := time.ParseDuration(os.Getenv(name))
	return d
}

// lockHome takes the home's lock file so only one daemon serves it.
func lockHome(h core.Home) (func(), error) {
	f, err := os.OpenFile(h.Lock(), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", h.Lock(), err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (%s)", ErrRunning, h.Dir)
		}
		return nil, fmt.Errorf("lock %s: %w", h.Lock(), err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteString(strconv.Itoa(os.Getpid()) + "\n")
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// listenPrivate listens on a unix socket only its owner may connect to.
// The daemon holds the home's lock, so a socket file left there is stale.
func listenPrivate(path string) (net.Listener, error) {
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("secure socket %s: %w", path, err)
	}
	return ln, nil
}

// guardHome notices a home whose mode was loosened while the daemon runs
// (a chmod, a restore from a backup) before it serves a request: it logs
// it and sets the home back to 0700, and the sockets to 0600. It repairs
// rather than refuses, so that nobody is locked out by it; see
// docs/security.md. A stat per request costs next to nothing beside the
// request itself.
func guardHome(home core.Home, log *slog.Logger, next http.Handler) http.Handler {
	private := map[string]os.FileMode{home.Dir: 0o700, home.Socket(): 0o600, home.MCPSocket(): 0o600}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for path, want := range private {
			fi, err := os.Stat(path)
			if err != nil || fi.Mode().Perm()&^want == 0 {
				continue
			}
			log.Warn("kandev home loosened while the daemon runs; tightening it again", "path", path,
				"mode", fmt.Sprintf("%o", fi.Mode().Perm()), "want", fmt.Sprintf("%o", want))
			if err := os.Chmod(path, want); err != nil {
				log.Error("tighten kandev home", "path", path, "err", err)
			}
		}
		next.ServeHTTP(w, r)
	})
}
