package kube

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/workspace"
)

// Launcher runs each agent it launches in a pod of its own: the engine's
// Launcher seam (core/engine.Launcher: agent.Spec in, *agent.Run out) for
// a task placed on a cluster. The spec's worktree (Dir, when it is a git
// worktree) is carried in on its branch; kandev's own binary is carried
// in, and the spec's command or MCP server naming it is pointed at the
// copy; the MCP connections of the pod reach DaemonSocket; the stderr goes
// to the spec's log. When the agent ends, or is killed, its worktree is
// fetched back into Dir and the pod deleted: nothing of the session is
// left in the namespace.
type Launcher struct {
	Client *Client
	// Image is the profile's image (needs /bin/sh, and git for a worktree).
	Image     string
	PullNever bool
	UID       int64
	CPU       string
	Memory    string
	// Grace is the pod's termination grace in seconds (0: 5).
	Grace int64
	// SelfExe is kandev's binary here; built static (CGO_ENABLED=0) so it
	// runs in any image.
	SelfExe string
	// DaemonSocket is the daemon's mcp.sock.
	DaemonSocket string
	// Logf is told what goes wrong after the start (nil: nothing).
	Logf func(string, ...any)

	mu       sync.Mutex
	sessions map[string]*Session
}

// Lost says the session's stream was cut by a fault (Session.Lost), for
// the engine to tell an outage from the agent's exit, as hosts.Remote.Lost
// does for SSH hosts.
func (l *Launcher) Lost(session string) bool {
	l.mu.Lock()
	s := l.sessions[session]
	l.mu.Unlock()
	return s != nil && s.Lost()
}

// retry calls f until it succeeds or ctx ends (then its last error),
// waiting 0.5 s doubling to 5 s between tries: through an API server's
// outage.
func retry(ctx context.Context, f func(context.Context) error) error {
	delay := 500 * time.Millisecond
	for {
		err := f(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		if delay *= 2; delay > 5*time.Second {
			delay = 5 * time.Second
		}
	}
}

// Launch implements core/engine.Launcher.
func (l *Launcher) Launch(spec agent.Spec, h agent.Handler) (*agent.Run, error) {
	logf := l.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	timeout := spec.StartTimeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	command := spec.Command
	if command == l.SelfExe {
		command = BinaryPath
	}
	var servers []acp.McpServer
	mcp := false
	for _, s := range spec.MCPServers {
		if s.Stdio != nil && s.Stdio.Command == l.SelfExe {
			st := *s.Stdio
			st.Command = BinaryPath
			st.Env = nil
			for _, e := range s.Stdio.Env {
				if e.Name == "KANDEV_SOCKET" {
					e.Value = MCPSocket
				}
				st.Env = append(st.Env, e)
			}
			s.Stdio = &st
			mcp = true
		}
		servers = append(servers, s)
	}
	task := ""
	for _, e := range spec.Env {
		if v, ok := strings.CutPrefix(e, "KANDEV_TASK_ID="); ok {
			task = v
		}
	}
	env := append(append([]string{}, spec.Env...), "KANDEV_SESSION_ID="+spec.SessionID, "KANDEV_SESSION_HOME="+spec.HomeID)

	var stderr io.Writer = io.Discard
	var logFile *os.File
	if spec.LogPath != "" {
		f, err := os.OpenFile(spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("kube: agent log: %w", err)
		}
		logFile, stderr = f, f
	}
	closeLog := func() {
		if logFile != nil {
			logFile.Close()
		}
	}
	sess, peer, err := l.Client.Start(ctx, PodSpec{
		SessionID: spec.SessionID, TaskID: task, HomeID: spec.HomeID, Image: l.Image, PullNever: l.PullNever,
		Command: command, Args: spec.Args, Env: env, UID: l.UID, CPU: l.CPU, Memory: l.Memory, Grace: l.Grace, MCP: mcp,
	}, l.SelfExe, stderr)
	if err != nil {
		closeLog()
		return nil, err
	}
	fail := func(err error) (*agent.Run, error) {
		dctx, c := context.WithTimeout(context.Background(), 30*time.Second)
		defer c()
		_ = sess.Delete(dctx, 0)
		closeLog()
		return nil, err
	}
	base, localDir := "", spec.Dir
	if spec.Dir != "" {
		if branch, err := workspace.Git(ctx, workspace.GitCall{Dir: spec.Dir, Args: []string{"rev-parse", "--abbrev-ref", "HEAD"}}); err == nil {
			if base, err = sess.CopyIn(ctx, spec.Dir, strings.TrimSpace(branch)); err != nil {
				return fail(err)
			}
		}
	}
	l.mu.Lock()
	if l.sessions == nil {
		l.sessions = map[string]*Session{}
	}
	l.sessions[spec.SessionID] = sess
	l.mu.Unlock()
	fwdCtx, stopFwd := context.WithCancel(context.Background())
	if mcp {
		sess.ForwardMCP(fwdCtx, l.DaemonSocket, logf)
	}
	// finish fetches the worktree back and deletes the pod, once, whether
	// the agent ended or is killed.
	var once sync.Once
	finished := make(chan struct{})
	finish := func() {
		once.Do(func() {
			stopFwd()
			fctx, c := context.WithTimeout(context.Background(), 2*time.Minute)
			defer c()
			if base != "" {
				if err := retry(fctx, func(ctx context.Context) error { return sess.FetchBack(ctx, localDir, base) }); err != nil {
					logf("kube: %v", err)
				}
			}
			if err := retry(fctx, func(ctx context.Context) error { return sess.Delete(ctx, 0) }); err != nil {
				logf("kube: %v", err)
			}
			closeLog()
			close(finished)
		})
	}
	agentDone := peer.Done
	go func() {
		<-agentDone
		finish()
	}()
	peer.Done = finished
	peer.Kill = finish
	spec.Dir, spec.MCPServers, spec.Command = WorkDir, servers, command
	return agent.Attach(spec, h, peer), nil
}
