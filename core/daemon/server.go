// Package daemon runs kandev's engine behind a unix socket (HTTP+JSON with
// a server-sent-events stream). Its clients live in core/daemonclient,
// which speaks the same socket without linking the engine or the store.
package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/config"
	"github.com/kandev/kandev/core/daemonclient"
	"github.com/kandev/kandev/core/engine"
	"github.com/kandev/kandev/core/wire"
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
}

// Serve runs the daemon until ctx ends, then shuts down: stop taking work,
// stop agent process groups, mark their sessions interrupted, exit.
func Serve(ctx context.Context, o ServeOptions) error {
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	log := o.Logger
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

	// The timeouts come from the environment, else config.toml, else the
	// built-ins; a bad value stops the start with the key or variable named.
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		return err
	}
	startTimeout, err := cfg.Duration("start_timeout")
	if err != nil {
		return err
	}
	idleTimeout, err := cfg.Duration("idle_timeout")
	if err != nil {
		return err
	}

	db, err := store.Open(ctx, o.Home.DB())
	if err != nil {
		return err
	}
	defer db.Close()
	eng, err := engine.New(ctx, engine.Options{Home: o.Home, DB: db, SelfExe: o.SelfExe, Socket: o.Home.MCPSocket(),
		Logger: log, Version: o.Version, Grace: o.Grace, StartTimeout: startTimeout,
		QuestionTurnGrace: durationEnv("KANDEV_QUESTION_TURN_GRACE"), AfterTurnEnd: failpoint(log),
		DuringRecovery: recoveryFailpoint(log), BeforeStart: startFailpoint(log), IdleTimeout: idleTimeout,
		BeforeTeardown: teardownFailpoint(log),
		NoResume:       o.NoResume, Config: func() (config.Config, error) { return config.Load(os.Getenv) },
		SSHConfig: os.Getenv("KANDEV_SSH_CONFIG")})
	if err != nil {
		return err
	}
	// The agents' socket listens before recovery restarts any agent, so
	// their kandev mcp finds it (connections wait until it serves).
	mcpLn, err := listenPrivate(o.Home.MCPSocket())
	if err != nil {
		eng.Close()
		return err
	}
	if err := eng.Recover(ctx); err != nil {
		mcpLn.Close()
		eng.Close()
		return err
	}
	// Containers of sessions that ended while no daemon ran (kill -9),
	// beside the start: asking a container engine costs it tens of ms.
	go eng.SweepContainers(ctx)
	ln, err := listenPrivate(o.Home.Socket())
	if err != nil {
		mcpLn.Close()
		eng.Close()
		return err
	}
	stopNotifier, err := startNotifier(ctx, eng, log)
	if err != nil {
		ln.Close()
		mcpLn.Close()
		eng.Close()
		return err
	}
	defer stopNotifier()
	h := NewHandler(eng, log)
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
	return nil
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

// Handler serves the engine over HTTP.
type Handler struct {
	eng *engine.Engine
	log *slog.Logger
	mux *http.ServeMux
	// cutCreate is the failpoint KANDEV_FAILPOINT=cut-after-create: the
	// first create is committed, then its connection dropped unanswered.
	cutCreate atomic.Bool
}

// NewHandler routes every client call to the engine.
func NewHandler(eng *engine.Engine, log *slog.Logger) *Handler {
	h := &Handler{eng: eng, log: log, mux: http.NewServeMux()}
	h.cutCreate.Store(os.Getenv("KANDEV_FAILPOINT") == "cut-after-create")
	m := h.mux
	// The rows of the operation table (core/wire), each served by its
	// engine method; the routes after them are bespoke (wire.Bespoke).
	route(m, wire.Version, none(h.eng.Version))
	route(m, wire.IntegrityCheck, none(h.eng.IntegrityCheck))
	m.HandleFunc(wire.ListTasks.Pattern(), h.listTasks)
	m.HandleFunc(wire.CreateTask.Pattern(), h.createTask)
	route(m, wire.GetTask, key(h.eng.GetTask))
	route(m, wire.EditTask, keyed(h.eng.EditTask))
	route(m, wire.ArchiveTask, keyedOptions(h.eng.ArchiveTask))
	route(m, wire.SetTaskStatus, func(ctx context.Context, in wire.Keyed[wire.StatusBody]) (core.Task, error) {
		return h.eng.SetTaskStatus(ctx, in.Key, in.In.Status)
	})
	route(m, wire.TaskStats, func(ctx context.Context, in wire.ListQuery) (core.TaskStats, error) {
		return h.eng.TaskStats(ctx, core.ListTasksInput(in))
	})
	route(m, wire.StartTask, keyed(h.eng.Messages.StartTask))
	route(m, wire.MessageTask, keyed(h.eng.Messages.MessageTask))
	route(m, wire.StopTask, keyedOptions(h.eng.StopTask))
	route(m, wire.AnswerQuestion, keyed(h.eng.Questions.AnswerQuestion))
	route(m, wire.Conversation, func(ctx context.Context, in wire.Keyed[wire.ConversationQuery]) (core.ConversationPage, error) {
		return h.eng.Messages.Conversation(ctx, in.Key, core.ConversationInput(in.In))
	})
	route(m, wire.HandoffTask, keyed(h.eng.HandoffTask))
	route(m, wire.BlockTask, keyed(h.eng.BlockTask))
	route(m, wire.TaskQueue, key(h.eng.Messages.TaskQueue))
	route(m, wire.DropQueued, keyed(h.eng.Messages.DropQueued))
	route(m, wire.TaskDiff, func(ctx context.Context, in wire.Keyed[wire.DiffQuery]) (core.TaskDiff, error) {
		return h.eng.Workspaces.Diff(ctx, in.Key, core.DiffInput(in.In))
	})
	route(m, wire.TaskReview, key(h.eng.Workspaces.Review))
	route(m, wire.PushTask, keyed(h.eng.Workspaces.Push))
	route(m, wire.PullRequestTask, keyed(h.eng.Workspaces.PullRequest))
	route(m, wire.MergeTask, keyed(h.eng.Workspaces.Merge))
	route(m, wire.DiscardTask, keyedOptions(h.eng.Workspaces.Discard))
	route(m, wire.PruneWorktrees, h.eng.Workspaces.Prune)
	h.usageRoutes(m)
	route(m, wire.ListRoles, none(h.eng.Roles.ListRoles))
	route(m, wire.AddRole, h.eng.Roles.AddRole)
	route(m, wire.GetRole, key(h.eng.Roles.GetRole))
	route(m, wire.EditRole, keyed(h.eng.Roles.EditRole))
	route(m, wire.RemoveRole, keyedOptions(h.eng.Roles.RemoveRole))
	route(m, wire.ListPersons, none(h.eng.Roles.ListPersons))
	route(m, wire.AddPerson, h.eng.Roles.AddPerson)
	route(m, wire.ListProfiles, none(h.eng.Roles.ListProfiles))
	route(m, wire.GetProfile, key(h.eng.Roles.GetProfile))
	route(m, wire.AddProfile, func(ctx context.Context, in wire.Keyed[core.Profile]) (core.Profile, error) {
		in.In.Name = in.Key
		return h.eng.Roles.AddProfile(ctx, in.In)
	})
	route(m, wire.RemoveProfile, keyedOptions(h.eng.Roles.RemoveProfile))
	h.hostRoutes(m)
	route(m, wire.FollowAppends, func(ctx context.Context, in wire.Keyed[wire.AppendsBody]) (wire.None, error) {
		return wire.None{}, h.eng.FollowAppends(ctx, in.Key, in.In.TaskID)
	})
	m.HandleFunc("GET /v1/task-summaries", h.listTaskSummaries)
	m.HandleFunc("GET /v1/events", h.events)
	m.HandleFunc("GET /v1/mcp/surface", h.mcpSurface)
	m.HandleFunc("POST /v1/mcp/call", h.mcpCall)
	// Anything else is answered in the API's own error shape, never with
	// the mux's plain-text 404 or 405 page.
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeErr(w, core.Errorf(core.CodeNotFound, "no such route: %s %s", r.Method, r.URL.Path))
	})
	return h
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

// MCPOnly serves the agents' socket: the MCP routes, and only with a
// session token. An agent gets this socket, not the operator's, so what
// it was given reaches no further than its token: no operator route, and
// not the external surface either (that is for a person's agent CLI).
func (h *Handler) MCPOnly() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !strings.HasPrefix(r.URL.Path, "/v1/mcp/"):
			writeErr(w, core.Errorf(core.CodeForbidden, "this socket serves only kandev mcp's calls with a session token; %s %s is the operator's", r.Method, r.URL.Path))
		case strings.TrimSpace(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")) == "":
			writeErr(w, core.Errorf(core.CodeForbidden, "this socket needs a session token (KANDEV_TOKEN)"))
		default:
			h.mux.ServeHTTP(w, r)
		}
	})
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The CLI and the TUI act as the operator. MCP routes derive their actor
	// from the session token instead.
	if !strings.HasPrefix(r.URL.Path, "/v1/mcp/") {
		r = r.WithContext(core.WithActor(r.Context(), core.OperatorActor()))
	}
	h.mux.ServeHTTP(w, r)
}

// statusOf maps an error code to an HTTP status, once.
func statusOf(code core.Code) int {
	switch code {
	case core.CodeValidation:
		return http.StatusBadRequest
	case core.CodeNotFound:
		return http.StatusNotFound
	case core.CodeForbidden:
		return http.StatusForbidden
	case core.CodeConflict:
		return http.StatusConflict
	case core.CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func writeErr(w http.ResponseWriter, err error) {
	ce := core.AsError(err)
	writeJSON(w, statusOf(ce.Code), wire.ErrorBody{Error: ce})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v)
}

func reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// MaxBody is the largest request body the daemon reads.
const MaxBody = 8 << 20

// decode reads a JSON body strictly. A body over MaxBody is refused as
// such, not as the truncated JSON it would otherwise look like.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, MaxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return core.Errorf(core.CodeValidation, "request body is too large: the limit is %d MiB", MaxBody>>20)
		}
		return core.Errorf(core.CodeValidation, "bad request body: %v", err)
	}
	return nil
}

// listTasks is the ListTasks row with its own encoder: the cached tasks
// are written from their pointers (writeTaskPtrs), not through reply.
func (h *Handler) listTasks(w http.ResponseWriter, r *http.Request) {
	in, err := parse(wire.ListTasks, r)
	if err != nil {
		writeErr(w, err)
		return
	}
	tasks, err := h.eng.TaskSnapshot(r.Context(), core.ListTasksInput(in))
	if err != nil {
		writeErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = writeTaskPtrs(w, tasks)
}

// listTaskSummaries is listTasks as the compact summary (core/wire), in
// the order a tree shows the tasks (engine.TreeSnapshot), so a reader can
// draw the first rows before the last line arrives.
func (h *Handler) listTaskSummaries(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tasks, err := h.eng.TreeSnapshot(r.Context(), core.ListTasksInput{All: q.Get("all") == "1", Root: q.Get("root")})
	if err != nil {
		writeErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/tab-separated-values; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_ = wire.WriteTaskSummaries(w, tasks)
}

// createTask is the CreateTask row with the cut-after-create failpoint,
// which needs the connection.
func (h *Handler) createTask(w http.ResponseWriter, r *http.Request) {
	in, err := parse(wire.CreateTask, r)
	if err != nil {
		writeErr(w, err)
		return
	}
	t, err := h.eng.CreateTask(r.Context(), in)
	if err == nil && h.cutCreate.CompareAndSwap(true, false) {
		h.log.Warn("failpoint: dropping the connection of a committed create", "task", t.ID)
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
	}
	reply(w, t, err)
}

// events streams the bus as server-sent events, with a comment line every
// 15 s so idle connections stay open through proxies and timeouts.
// ?appends= filters the message.appended events (core.EventsInput.Appends);
// the Kandev-Subscription header names the subscription for
// FollowAppends, and the name dies with the request.
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeErr(w, core.Errorf(core.CodeInternal, "streaming unsupported"))
		return
	}
	q := r.URL.Query()
	sub, ch, cancel := h.eng.Bus().SubscribeAppends(q.Get("task"), engine.AppendsOf(q.Get("appends")))
	defer cancel()
	w.Header().Set(wire.SubscriptionHeader, sub)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, ": kandev events from seq %d\n\n", h.eng.Bus().Seq())
	fl.Flush()
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			fl.Flush()
		case ev, ok := <-ch:
			if !ok {
				return
			}
			b, err := json.Marshal(ev)
			if err != nil {
				h.log.Error("encode event", "err", err)
				continue
			}
			fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Type, b)
			// Deliver bursts in one flush.
			for len(ch) > 0 {
				ev, ok = <-ch
				if !ok {
					break
				}
				if b, err := json.Marshal(ev); err == nil {
					fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Type, b)
				}
			}
			fl.Flush()
		}
	}
}

// mcpActor derives the caller from its bearer token (none: external).
func (h *Handler) mcpActor(r *http.Request) (context.Context, error) {
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	actor, err := h.eng.Authenticate(r.Context(), strings.TrimSpace(token))
	if err != nil {
		return nil, err
	}
	return core.WithActor(r.Context(), actor), nil
}

func (h *Handler) mcpSurface(w http.ResponseWriter, r *http.Request) {
	ctx, err := h.mcpActor(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	s, err := h.eng.ToolSurface(ctx)
	reply(w, s, err)
}

func (h *Handler) mcpCall(w http.ResponseWriter, r *http.Request) {
	ctx, err := h.mcpActor(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	var call wire.MCPCall
	if err := decode(r, &call); err != nil {
		writeErr(w, err)
		return
	}
	res, err := h.eng.CallTool(ctx, call.Tool, call.Arguments)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"result": res})
}
