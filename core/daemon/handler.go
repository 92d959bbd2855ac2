package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/engine"
	"github.com/kandev/kandev/core/wire"
)

// The Handler: the daemon's routes, and the few that need more than a
// row of the operation table (route.go).

// Handler serves the engine over HTTP.
type Handler struct {
	eng *engine.Engine
	log *slog.Logger
	mux *http.ServeMux
	// cutCreate is the failpoint KANDEV_FAILPOINT=cut-after-create: the
	// first create is committed, then its connection dropped unanswered.
	cutCreate atomic.Bool
	// web is the web inbox's pairing and devices (web.go); nil in a
	// handler built without a database (tests), which answers that the
	// inbox is off.
	web *webState
}

// NewHandler routes every client call to the engine.
func NewHandler(eng *engine.Engine, log *slog.Logger) *Handler {
	h := &Handler{eng: eng, log: log, mux: http.NewServeMux()}
	h.cutCreate.Store(os.Getenv("KANDEV_FAILPOINT") == "cut-after-create")
	m := h.mux
	// The rows of the operation table (core/wire), each served by its
	// engine method; the routes after them are bespoke (wire.Bespoke).
	route(m, wire.Version, none(h.eng.Version))
	route(m, wire.IntegrityCheck, none(h.eng.Tasks.IntegrityCheck))
	m.HandleFunc(wire.ListTasks.Pattern(), h.listTasks)
	m.HandleFunc(wire.CreateTask.Pattern(), h.createTask)
	route(m, wire.GetTask, key(h.eng.Tasks.GetTask))
	route(m, wire.EditTask, keyed(h.eng.Tasks.EditTask))
	route(m, wire.ArchiveTask, keyedOptions(h.eng.Tasks.ArchiveTask))
	route(m, wire.SetTaskStatus, func(ctx context.Context, in wire.Keyed[wire.StatusBody]) (core.Task, error) {
		return h.eng.Tasks.SetTaskStatus(ctx, in.Key, in.In.Status)
	})
	route(m, wire.TaskStats, func(ctx context.Context, in wire.ListQuery) (api.TaskStats, error) {
		return h.eng.Tasks.TaskStats(ctx, api.ListTasksInput(in))
	})
	route(m, wire.StartTask, keyed(h.eng.Messages.StartTask))
	route(m, wire.MessageTask, keyed(h.eng.Messages.MessageTask))
	route(m, wire.StopTask, keyedOptions(h.eng.Chain.StopTask))
	route(m, wire.AnswerQuestion, keyed(h.eng.Questions.AnswerQuestion))
	route(m, wire.Conversation, func(ctx context.Context, in wire.Keyed[wire.ConversationQuery]) (api.ConversationPage, error) {
		return h.eng.Messages.Conversation(ctx, in.Key, api.ConversationInput(in.In))
	})
	route(m, wire.HandoffTask, keyed(h.eng.Chain.HandoffTask))
	route(m, wire.BlockTask, keyed(h.eng.Chain.BlockTask))
	route(m, wire.TaskQueue, key(h.eng.Messages.TaskQueue))
	route(m, wire.DropQueued, keyed(h.eng.Messages.DropQueued))
	route(m, wire.TaskDiff, func(ctx context.Context, in wire.Keyed[wire.DiffQuery]) (api.TaskDiff, error) {
		return h.eng.Workspaces.Diff(ctx, in.Key, api.DiffInput(in.In))
	})
	route(m, wire.TaskReview, key(h.eng.Workspaces.Review))
	route(m, wire.PushTask, keyed(h.eng.Workspaces.Push))
	route(m, wire.PullRequestTask, keyed(h.eng.Workspaces.PullRequest))
	route(m, wire.MergeTask, keyed(h.eng.Workspaces.Merge))
	route(m, wire.DiscardTask, keyedOptions(h.eng.Workspaces.Discard))
	route(m, wire.PruneWorktrees, h.eng.Workspaces.Prune)
	usageRoutes(m, h.eng)
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
	hostRoutes(m, h.eng)
	route(m, wire.WebPair, func(ctx context.Context, in api.WebPairInput) (api.WebPairing, error) {
		if h.web == nil {
			return api.WebPairing{}, core.Errorf(core.CodeUnavailable, "the web inbox is off")
		}
		return h.web.pair(ctx, in)
	})
	route(m, wire.WebDevices, func(ctx context.Context, _ wire.None) ([]api.WebDevice, error) {
		if h.web == nil {
			return []api.WebDevice{}, nil
		}
		return h.web.list(ctx)
	})
	route(m, wire.WebRevoke, func(ctx context.Context, in wire.Keyed[wire.None]) (api.WebDevice, error) {
		if h.web == nil {
			return api.WebDevice{}, core.Errorf(core.CodeNotFound, "no paired device %q", in.Key)
		}
		return h.web.revoke(ctx, in.Key)
	})
	route(m, wire.FollowAppends, func(ctx context.Context, in wire.Keyed[wire.AppendsBody]) (wire.None, error) {
		return wire.None{}, h.eng.Tasks.FollowAppends(ctx, in.Key, in.In.TaskID)
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

// listTasks is the ListTasks row with its own encoder: the cached tasks
// are written from their pointers (writeTaskPtrs), not through reply.
func (h *Handler) listTasks(w http.ResponseWriter, r *http.Request) {
	in, err := parse(wire.ListTasks, r)
	if err != nil {
		writeErr(w, err)
		return
	}
	tasks, err := h.eng.Tasks.TaskSnapshot(r.Context(), api.ListTasksInput(in))
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
	tasks, err := h.eng.Tasks.TreeSnapshot(r.Context(), api.ListTasksInput{All: q.Get("all") == "1", Root: q.Get("root")})
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
	t, err := h.eng.Tasks.CreateTask(r.Context(), in)
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
// ?appends= filters the message.appended events (api.EventsInput.Appends);
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
	actor, err := h.eng.Tools.Authenticate(r.Context(), strings.TrimSpace(token))
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
	s, err := h.eng.Tools.ToolSurface(ctx)
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
	res, err := h.eng.Tools.CallTool(ctx, call.Tool, call.Arguments)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"result": res})
}
