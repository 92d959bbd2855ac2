package daemon_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/sandbox"
)

type benchHandler struct{}

func (benchHandler) Update(context.Context, acp.SessionNotification) {}
func (benchHandler) Permission(context.Context, acp.RequestPermissionRequest) acp.RequestPermissionResponse {
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}
}
func (benchHandler) Garbage(string) {}
func (benchHandler) Fault(string)   {}

// BenchmarkSessionStart is a session's start, from spawning the agent
// (the mock agent of a static kandev) to its answer to session/new, on
// the host, under bubblewrap and in a docker and a podman container, side by side in
// one run (issue 25: bwrap adds at most 20 ms, docker at most 1 s). The
// teardown is not timed. A mode this machine cannot run is skipped.
func BenchmarkSessionStart(b *testing.B) {
	bin := staticKandev(b)
	root := b.TempDir()
	work, home := filepath.Join(root, "work"), filepath.Join(root, "home")
	for _, d := range []string{work, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	view := func(mode, image, sid string) *sandbox.View {
		v, err := sandbox.Describe(sandbox.Input{Mode: mode, Image: image, Worktree: work, OperatorHome: home,
			PrivateHome: filepath.Join(root, "private"), SelfExe: bin, SessionID: sid, NoNetwork: mode != core.SandboxBwrap})
		if err != nil {
			b.Fatal(err)
		}
		return &v
	}
	run := func(b *testing.B, mode string, mk func(sid string) *sandbox.View) {
		for i := range b.N {
			sid := "sbench" + core.NewID()
			spec := agent.Spec{Command: bin, Args: []string{"mock-agent"}, Dir: work, SessionID: sid,
				Env: []string{"KANDEV_MOCK_STATE_DIR=" + filepath.Join(home, "state")}, StartTimeout: time.Minute}
			if mk != nil {
				spec.Sandbox = mk(sid)
			}
			b.StartTimer()
			r, err := agent.Start(spec, benchHandler{})
			if err == nil {
				err = r.Open(context.Background())
			}
			b.StopTimer()
			if err != nil {
				b.Fatalf("%s start %d: %v", mode, i, err)
			}
			r.Terminate(agent.Grace{})
			<-r.Exited()
		}
	}
	b.Run("none", func(b *testing.B) { b.StopTimer(); run(b, "none", nil) })
	b.Run("bwrap", func(b *testing.B) {
		if _, err := exec.LookPath("bwrap"); err != nil {
			b.Skip("bubblewrap is not installed")
		}
		b.StopTimer()
		run(b, "bwrap", func(sid string) *sandbox.View { return view(core.SandboxBwrap, "", sid) })
	})
	for _, name := range engines {
		b.Run(name, func(b *testing.B) {
			e := startEngine(b, name, false)
			image := importImage(b, e, bin)
			for _, kv := range e.env {
				k, v, _ := strings.Cut(kv, "=")
				b.Setenv(k, v)
			}
			b.StopTimer()
			run(b, name, func(sid string) *sandbox.View { return view(name, image, sid) })
		})
	}
}
