package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// Open runs initialize, then continues the earlier session when the agent
// can: session/resume, then session/load, then session/new, each failure
// falling to the next (Fallbacks lists them). An agent may advertise resume
// and not implement it (Qwen Code), so an advertised method is no promise.
func (r *Run) Open(ctx context.Context) error {
	timeout := r.spec.StartTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ctx, stop := r.cancelOnExit(ctx)
	defer stop()

	init, err := r.initialize(ctx)
	if err != nil {
		return err
	}
	r.caps = init.AgentCapabilities
	servers := r.spec.MCPServers
	if servers == nil {
		servers = []acp.McpServer{}
	}
	if r.spec.ResumeID != "" {
		id := acp.SessionId(r.spec.ResumeID)
		steps := []struct {
			method string
			ok     bool
			call   func() error
		}{
			{acp.AgentMethodSessionResume, r.caps.SessionCapabilities.Resume != nil, func() error {
				_, err := r.conn.ResumeSession(ctx, acp.ResumeSessionRequest{SessionId: id, Cwd: r.spec.Dir, McpServers: servers})
				return err
			}},
			{acp.AgentMethodSessionLoad, r.caps.LoadSession, func() error {
				_, err := r.conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: id, Cwd: r.spec.Dir, McpServers: servers})
				return err
			}},
		}
		for _, st := range steps {
			if !st.ok {
				continue
			}
			err := st.call()
			if err == nil {
				r.mu.Lock()
				r.sessionID, r.resumed = id, true
				r.mu.Unlock()
				return nil
			}
			if ctx.Err() != nil || r.disconnected() {
				return r.wrap(ctx, st.method, err)
			}
			// The agent cannot continue that session this way: try the next
			// rather than refuse the turn; the conversation kandev recorded
			// is still whole.
			r.fallbacks = append(r.fallbacks, fmt.Sprintf("%s %s failed: %s", st.method, id, truncate(err.Error(), 300)))
		}
	}
	sess, err := r.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: r.spec.Dir, McpServers: servers})
	if err != nil && authRequired(err) && ctx.Err() == nil && !r.disconnected() {
		// Codex (codex-acp) answers session/new "Authentication required"
		// until the client authenticates, even with its key in the
		// environment; it names the variables each method reads. Where
		// those are set in the agent's environment, authenticate with that
		// method and ask once more. Only after the refusal: an agent that
		// opens sessions without authenticate keeps its own choice (a
		// ChatGPT login is not swapped for an API key that is also set).
		if id := envAuthMethod(init.AuthMethods, r.agentEnv()); id != "" {
			if _, aerr := r.conn.Authenticate(ctx, acp.AuthenticateRequest{MethodId: id}); aerr != nil {
				return r.wrap(ctx, "authenticate "+id, aerr)
			}
			r.mu.Lock()
			r.authMethod = id
			r.mu.Unlock()
			sess, err = r.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: r.spec.Dir, McpServers: servers})
		}
	}
	if err != nil {
		return r.wrap(ctx, "session/new", err)
	}
	r.mu.Lock()
	r.sessionID = sess.SessionId
	r.mu.Unlock()
	return nil
}

// initialize sends ACP's initialize as kandev's client, which offers the
// agent no client capabilities. Open and Initialize (doctor's handshake)
// both send it, so an agent sees the same request from each. An error is
// wrapped: wrap waits for the exit of an agent whose input or output
// closed and says why it went.
func (r *Run) initialize(ctx context.Context) (acp.InitializeResponse, error) {
	init, err := r.conn.Initialize(ctx, acp.InitializeRequest{
		ProtocolVersion:    acp.ProtocolVersionNumber,
		ClientCapabilities: acp.ClientCapabilities{},
		ClientInfo:         &acp.Implementation{Name: "kandev", Version: "1"},
	})
	if err != nil {
		return init, r.wrap(ctx, "initialize", err)
	}
	return init, nil
}

// AuthMethod is the ACP authentication method Open used because the
// agent refused a session without one ("" when none was needed).
func (r *Run) AuthMethod() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.authMethod
}

// authRequired reports whether err is ACP's "Authentication required"
// (-32000).
func authRequired(err error) bool {
	var re *acp.RequestError
	return errors.As(err, &re) && re.Code == -32000
}

// envAuthMethod is the first of the agent's env_var authentication methods
// whose required variables are all set (non-empty) in env, or "".
func envAuthMethod(methods []acp.AuthMethod, env map[string]string) string {
	for _, m := range methods {
		ev := m.EnvVar
		if ev == nil || len(ev.Vars) == 0 {
			continue
		}
		ok := true
		for _, v := range ev.Vars {
			if !v.Optional && env[v.Name] == "" {
				ok = false
			}
		}
		if ok {
			return ev.Id
		}
	}
	return ""
}

// agentEnv is the environment the agent was started with: the daemon's,
// then the spec's (as agentCommand builds it; a sandbox passes it on).
func (r *Run) agentEnv() map[string]string {
	env := map[string]string{}
	for _, kv := range append(os.Environ(), r.spec.Env...) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// Fallbacks lists the ways of continuing the earlier session that Open
// tried and that failed, in order.
func (r *Run) Fallbacks() []string { return r.fallbacks }

// Settle waits until every notification kandev has received from the
// agent so far has been handed to the handler (bounded by ctx, the
// agent's exit and settleWait). The engine calls it before the first
// prompt of a resumed session: what the agent streamed until then, as far
// as it reached kandev, is its replay of the history (Gemini CLI streams
// it after answering session/load), and none of it is new.
func (r *Run) Settle(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, settleWait)
	defer cancel()
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-r.exited:
		}
		close(done)
	}()
	r.flow.settle(done)
	cancel()
	<-done
}

// AwaitEarlier waits until the notifications read before now have been
// handed to the handler, bounded as Settle is (ctx, the agent's exit,
// settleWait). Unlike Settle it does not wait for what is still unread:
// an agent that streams on while it asks must not hold its own request.
func (r *Run) AwaitEarlier(ctx context.Context) {
	target := r.flow.handedSoFar()
	ctx, cancel := context.WithTimeout(ctx, settleWait)
	defer cancel()
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-r.exited:
		}
		close(done)
	}()
	r.flow.waitHandled(target, done)
	cancel()
	<-done
}

// settleWait bounds Settle: a handler stuck on the store must not hold
// the turn back for ever.
const settleWait = 10 * time.Second

// Prompt runs one turn and returns the agent's stop reason. The SDK hands
// every session/update sent before the response to the handler first.
//
// When kandev cancelled the turn and the agent answers with a JSON-RPC
// error instead of stopReason "cancelled" (Qwen Code replies -32603
// "Request was aborted"), the turn was cancelled, not failed: the agent is
// alive and its session usable.
func (r *Run) Prompt(ctx context.Context, text string) (acp.StopReason, error) {
	ctx, stop := r.cancelOnExit(ctx)
	defer stop()
	before := r.cancelCount()
	resp, err := r.conn.Prompt(ctx, acp.PromptRequest{SessionId: acp.SessionId(r.SessionID()), Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
	if err != nil {
		var rpcErr *acp.RequestError
		if r.cancelCount() != before && errors.As(err, &rpcErr) && ctx.Err() == nil && !r.disconnected() && r.GarbageLine() == "" && r.Fault() == "" {
			return acp.StopReasonCancelled, nil
		}
		return "", r.wrap(ctx, "prompt", err)
	}
	if uh, ok := r.handler.(UsageHandler); ok && resp.Usage != nil {
		uh.TurnUsage(*resp.Usage)
	}
	return resp.StopReason, nil
}

// permissionContext derives the context a permission request is handled
// under: Cancel ends it. done releases it.
func (r *Run) permissionContext(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	r.mu.Lock()
	if r.permissions == nil {
		r.permissions = map[uint64]context.CancelFunc{}
	}
	r.permSeq++
	id := r.permSeq
	r.permissions[id] = cancel
	r.mu.Unlock()
	return ctx, func() {
		r.mu.Lock()
		delete(r.permissions, id)
		r.mu.Unlock()
		cancel()
	}
}

func (r *Run) cancelCount() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cancels
}

// Cancel asks the agent to end the running turn (session/cancel).
func (r *Run) Cancel(ctx context.Context) error {
	// A stop may cancel while Open still runs in another goroutine: the
	// session id is read under the lock Open writes it under.
	r.mu.Lock()
	id := r.sessionID
	if id == "" {
		r.mu.Unlock()
		return nil
	}
	// Counted before sending: the agent's reply may beat our return.
	r.cancels++
	for _, cancel := range r.permissions {
		cancel()
	}
	r.mu.Unlock()
	return r.conn.Cancel(ctx, acp.CancelNotification{SessionId: id})
}
