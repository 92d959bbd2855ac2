package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/core/hosts"
	"github.com/kandev/kandev/store"
)

// launchPlan is what a launch will run, decided before the task's lock is
// taken: the role and its profile, the command, where it runs, the session
// it resumes, its capabilities and its new session's id and token.
type launchPlan struct {
	role    store.Role
	prof    core.Profile
	command string
	// remote is the host the agent runs on (nil: this machine); hostErr,
	// when set, fails the run once its session is recorded.
	remote  *hosts.Remote
	hostErr error
	// resumeID is the agent session the role last had on the task.
	resumeID   string
	set        capability.Set
	sessionID  string
	token      string
	tokenHash  string
	setupOut   string
	setupError error
	// servers are the profile's own MCP servers, their commands found on
	// this machine's PATH for a run here (mcpservers.go).
	servers []acp.McpServer
}

// planLaunch resolves what a task's run will be. An error means no run:
// errFenced when the task has no role, an unservedError when the role,
// its profile or its command is missing (the task waits for them).
// A task on a host is placed first (placement.go): it takes one of the
// host's slots, or waits for one, and a task of host "auto" is fixed on
// one, so *t is updated.
func (rs *Runs) planLaunch(ctx context.Context, rt *taskRuntime, fence uint64, tp *core.Task) (launchPlan, error) {
	t := *tp
	if t.Assignee == nil || !t.Assignee.IsRole() {
		return launchPlan{}, errFenced
	}
	role, err := rs.roles.roleOf(ctx, t.Assignee.Name)
	if err != nil {
		return launchPlan{}, &unservedError{cause: core.WaitCannotStart, reason: fmt.Sprintf("role %s cannot start: %v", t.Assignee.Name, err)}
	}
	prof, err := rs.roles.profile(ctx, role.Profile)
	if err == nil {
		prof, err = rs.k.withConfigServers(prof)
	}
	if err != nil {
		return launchPlan{}, &unservedError{cause: core.WaitCannotStart, reason: fmt.Sprintf("profile %s cannot start: %s", role.Profile, err.Error())}
	}
	// A run on a host takes one of its slots, or waits for one.
	if t, err = rs.hosts.placeRun(ctx, t); err != nil {
		var un *unservedError
		if !errors.As(err, &un) {
			err = &unservedError{cause: core.WaitCannotStart, reason: err.Error()}
		}
		return launchPlan{}, err
	}
	*tp = t
	p := launchPlan{role: role, prof: prof}
	// The seam where a task on a host takes the remote launcher
	// (docs/hosts.md): a host that cannot be reached fails the run with
	// ssh's error (once the session is recorded); a reachable one runs
	// the agent there, never on this machine.
	if owner, ok := rs.workspaces.worktreeOwner(t); ok && owner.Host != t.Host {
		// A worktree lives on one machine, and a fetch from a host
		// replaces the local copy's files: a task works in another's
		// worktree only where that one runs.
		p.hostErr = fmt.Errorf("task %s works in task %s's worktree, which is %s: run it there too (--host %s) or give it a worktree of its own",
			t.ID, owner.ID, hostWord(owner.Host), hostOrLocal(owner.Host))
	} else if t.Host != "" {
		if err := rs.hosts.awaitHost(rt, fence, t); err != nil {
			return launchPlan{}, err
		}
		p.remote, p.hostErr = rs.hosts.remoteFor(ctx, t)
	}
	p.command = prof.Command
	if p.command == core.SelfCommand {
		p.command = rs.k.opts.SelfExe
	} else if path, err := exec.LookPath(p.command); t.Host == "" && err != nil && !errors.Is(err, fs.ErrPermission) {
		// (On a host the command is the host's to find, not this machine's.)
		// Missing is not a failure: the task waits and starts once the CLI
		// is installed. A file that is there but cannot run is: spawning it
		// fails in startRun and the run escalates.
		return launchPlan{}, &unservedError{cause: core.WaitCannotStart, reason: fmt.Sprintf("profile %s cannot start: command %s not found in PATH", prof.Name, prof.Command)}
	} else if err == nil {
		p.command = path
	}
	if p.remote != nil {
		if len(prof.Forwards) > 0 && core.SandboxRank(t.Sandbox) > 0 {
			// A forward reaches this machine's loopback; from a host it
			// would be a tunnel nobody asked for.
			return launchPlan{}, fmt.Errorf("profile %s forwards ports of this machine's loopback (%v), which a task on host %s cannot reach: run it here, or use a profile without --forward", prof.Name, prof.Forwards, t.Host)
		}
		confineOnHost(t, prof, p.command, p.remote)
	}
	rs.k.clearUnserved(rt.id)
	if prev, err := rs.k.db.LatestAgentSession(ctx, t.ID, role.Name); err == nil {
		p.resumeID = prev.AgentSessionID
	}
	p.set = rs.capabilitySet(t)
	p.servers = profileServers(prof, t.Host == "")
	if p.token, p.tokenHash, err = newToken(); err != nil {
		return launchPlan{}, err
	}
	p.sessionID = "s" + core.NewID()
	return p, nil
}

// prepareLaunch readies where the run goes, outside the task's lock: the
// worktree's .kandev/setup before its first agent (it may take minutes; a
// stop meanwhile fences startRun), or the host's binary, directories and
// worktree with its .worktreeinclude files and .kandev/setup. A failure is
// recorded in p and fails the run once its session is.
func (rs *Runs) prepareLaunch(ctx context.Context, t core.Task, p *launchPlan) {
	if t.Host == "" {
		p.setupOut, p.setupError = rs.workspaces.setupWorktree(ctx, t, p)
	} else if p.remote != nil {
		p.setupOut, p.setupError, p.hostErr = hostPrepared(p.remote, p.remote.Prepare(ctx))
	}
}

// launchSpec is the agent process a plan runs: its profile's command,
// arguments and environment in the task's directory, with kandev's MCP
// server, which carries the session's token, and then the profile's own.
func (rs *Runs) launchSpec(t core.Task, p launchPlan) agent.Spec {
	var env []string
	if p.prof.Command == core.SelfCommand && os.Getenv("KANDEV_MOCK_STATE_DIR") == "" {
		// The mock agent no longer sees KANDEV_HOME; its sessions' state
		// still belongs to this home, not to a directory homes share.
		env = append(env, "KANDEV_MOCK_STATE_DIR="+filepath.Join(rs.k.opts.Home.Dir, "mock-agent"))
	}
	env = append(append(append(env, p.prof.Env...), clearedAgentEnv...),
		"KANDEV_TASK_ID="+t.ID)
	return agent.Spec{
		Command: p.command, Args: p.prof.Args, Env: env, Dir: t.CWD, SessionID: p.sessionID,
		HomeID:  agent.HomeID(rs.k.opts.Home.Dir),
		LogPath: rs.k.opts.Home.SessionLog(p.sessionID), ResumeID: p.resumeID,
		StartTimeout: startTimeout(p.prof, rs.k.opts.StartTimeout), Logger: rs.k.log.With("session", p.sessionID),
		MCPServers: append([]acp.McpServer{{Stdio: &acp.McpServerStdio{
			Name: core.KandevMCPServer, Command: rs.k.opts.SelfExe, Args: []string{"mcp"},
			Env: []acp.EnvVariable{{Name: "KANDEV_SOCKET", Value: rs.k.opts.Socket}, {Name: "KANDEV_TOKEN", Value: p.token}},
		}}}, p.servers...),
	}
}

// startRun records a planned run's session and token and spawns its
// process, under the task's lock and the stop fence: a stop or shutdown
// since the plan gives errFenced. A failure to start is recorded with the
// stall-check outbox and returned as a runFailedError. The run it returns
// is registered and watched; its session is not open yet.
func (rs *Runs) startRun(ctx context.Context, rt *taskRuntime, fence uint64, t core.Task, p launchPlan) (*liveRun, error) {
	rt.mu.Lock()
	if rt.fence != fence || rs.k.isClosing() {
		rt.mu.Unlock()
		return nil, errFenced
	}
	now := time.Now().UTC()
	// Announces nothing itself: the run is announced by the refresh below,
	// once its process is registered and the task's lock released.
	_, err := rs.k.tx(ctx, func(tx *store.Tx, _ *changes) error {
		if err := tx.InsertSession(ctx, store.Session{ID: p.sessionID, TaskID: t.ID, Role: p.role.Name, Profile: p.prof.Name,
			State: string(core.SessionStarting), CreatedAt: now, UpdatedAt: now}); err != nil {
			return err
		}
		return tx.InsertToken(ctx, store.Token{Hash: p.tokenHash, SessionID: p.sessionID, TaskID: t.ID, CreatedAt: now})
	})
	if err != nil {
		rt.mu.Unlock()
		rs.k.log.Error("record session", "task", t.ID, "err", err)
		return nil, &writeError{err: err}
	}
	if p.hostErr != nil {
		return nil, rs.startFailed(ctx, rt, t, p, "agent failed to start: "+p.hostErr.Error())
	}
	if p.setupError != nil {
		return nil, rs.startFailed(ctx, rt, t, p, "worktree setup failed: "+p.setupError.Error())
	}
	if p.setupOut != "" {
		rs.k.note(ctx, t.ID, p.sessionID, core.MsgStatus, "kandev", "worktree setup:\n"+p.setupOut, nil)
	}
	run := &liveRun{rt: rt, sessionID: p.sessionID, role: p.role.Name, profile: p.prof.Name, set: p.set, opening: true, remote: p.remote}
	run.rec = newRecorder(rs, t.ID, p.sessionID, run)
	spec := rs.launchSpec(t, p)
	var proc *agent.Run
	if p.remote != nil {
		if err = hostSandboxErr(t.Host, t.Sandbox); err == nil {
			proc, err = p.remote.Launch(spec, run.rec)
		}
	} else {
		proc, err = rs.launchConfined(t, p.prof, spec, run.rec)
	}
	if err != nil {
		return nil, rs.startFailed(ctx, rt, t, p, "agent failed to start: "+err.Error())
	}
	run.proc = proc
	// Registered with the closing check, so a shutdown that already took
	// its list of runs cannot miss this one.
	if !rs.k.live.register(run, p.tokenHash, core.Actor{Kind: core.ActorAgent, TaskID: t.ID, SessionID: p.sessionID}) {
		rs.finishSessionUpdate("", p.sessionID, interruptedEnd("shut down"), false)
		rt.mu.Unlock()
		proc.Terminate(rs.k.opts.Grace)
		rs.tornDown(p.sessionID)
		return nil, errFenced
	}
	rt.run = run
	pid := proc.PID()
	rs.updateSession(p.sessionID, store.SessionUpdate{PID: &pid})
	rs.procWG.Add(1)
	go rs.watchExit(run)
	rt.mu.Unlock()
	rs.k.refreshQuiet(t.ID)
	return run, nil
}

// startFailed records a run that failed before its process ran, with the
// stall-check outbox, releases the task's lock (held by the caller) and
// says why on the task.
func (rs *Runs) startFailed(ctx context.Context, rt *taskRuntime, t core.Task, p launchPlan, reason string) error {
	rs.finishSessionChecked(t.ID, p.sessionID, core.SessionFailed, reason, true)
	rt.mu.Unlock()
	rs.k.note(ctx, t.ID, p.sessionID, core.MsgStatus, "kandev", reason, nil)
	return &runFailedError{role: p.role.Name, reason: reason}
}

// openRun opens (or resumes) a started run's agent session, outside the
// task's lock, then records it under the lock unless a stop took the run
// meanwhile (errFenced).
func (rs *Runs) openRun(ctx context.Context, rt *taskRuntime, t core.Task, run *liveRun, p launchPlan) (*liveRun, error) {
	proc := run.proc
	// What the agent streams while its session opens is a session/load
	// replay of history kandev already recorded: none of it is new. A
	// resumed session's replay may come after the load's answer (Gemini
	// CLI), so it is filtered until the first prompt (replayDone).
	run.rec.setReplaying(true)
	openErr := proc.Open(ctx)
	if openErr != nil || !proc.Resumed() {
		run.rec.setReplaying(false)
	}
	if openErr == nil && proc.GarbageLine() != "" {
		// Non-ACP output before the answers: the session may be up, but the
		// agent is not speaking the protocol (see also recorder.Garbage).
		openErr = fmt.Errorf("agent wrote output that is not ACP: %q", truncateRunes(proc.GarbageLine(), 200))
	}

	rt.mu.Lock()
	defer rt.mu.Unlock()
	run.opening = false
	if rt.run != run {
		return nil, errFenced // a stop (or shutdown) took it meanwhile
	}
	if openErr != nil {
		reason := "agent failed to start: " + openErr.Error()
		rs.failRunLocked(run, reason)
		rs.k.note(ctx, t.ID, p.sessionID, core.MsgStatus, "kandev", reason, nil)
		return nil, &runFailedError{role: p.role.Name, reason: reason}
	}
	agentSID := proc.SessionID()
	state := string(core.SessionWaitingForInput)
	rs.updateSession(p.sessionID, store.SessionUpdate{AgentSessionID: &agentSID, State: &state})
	for _, f := range proc.Fallbacks() {
		rs.k.note(ctx, t.ID, p.sessionID, core.MsgStatus, "kandev", "resume: "+f, map[string]any{"resume_fallback": true})
	}
	how := "started a new agent session"
	if proc.Resumed() {
		how = "resumed agent session " + agentSID
	} else if p.resumeID != "" {
		how = "could not resume agent session " + p.resumeID + "; started a new one"
	}
	pid := proc.PID()
	meta := map[string]any{"resumed": proc.Resumed(), "agent_session_id": agentSID}
	if m := proc.AuthMethod(); m != "" {
		how += "; authenticated with " + m + " (the agent refused a session without)"
		meta["auth_method"] = m
	}
	if len(p.servers) > 0 {
		// Said where the run is told, so each run's log keeps what it got.
		names := serverNames(p.prof)
		how += "; MCP servers: " + strings.Join(names, ", ")
		meta["mcp_servers"] = names
	}
	rs.k.note(ctx, t.ID, p.sessionID, core.MsgStatus, "kandev", fmt.Sprintf("role %s (profile %s, pid %d): %s", p.role.Name, p.prof.Name, pid, how), meta)
	return run, nil
}
