package engine_test

import (
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// Placement's rules at creation (docs/hosts.md): --host auto needs a
// host; a task made with it stays "auto" until its first run places it;
// a subtask inherits its parent's host (auto too) unless given another;
// and on a host bwrap is accepted (autopilot's default there) while a
// container sandbox is refused, naming why.
func TestHostPlacementRules(t *testing.T) {
	env := newEngineEnv(t)
	_, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "nowhere", CWD: env.cwd, Host: "auto"})
	i2WantErr(t, err, core.CodeValidation, "--host auto", "no hosts", "kandev host add")

	// Not dialled at add or create: the port is closed.
	if _, err := env.eng.Hosts.Add(env.ctx, api.HostInput{Name: "lb", SSH: "nobody@127.0.0.1:1", MaxAgents: 1}); err != nil {
		t.Fatal(err)
	}
	auto := env.create(api.CreateTaskInput{Title: "auto", Host: "auto"})
	if auto.Host != "auto" {
		t.Fatalf("--host auto: host %q before its first run", auto.Host)
	}
	if kid := env.create(api.CreateTaskInput{Title: "kid", ParentID: auto.ID}); kid.Host != "auto" {
		t.Errorf("child of an auto task: host %q", kid.Host)
	}
	named := env.create(api.CreateTaskInput{Title: "named", Host: "lb"})
	if kid := env.create(api.CreateTaskInput{Title: "kid", ParentID: named.ID}); kid.Host != "lb" {
		t.Errorf("child of a task on lb: host %q", kid.Host)
	}
	if kid := env.create(api.CreateTaskInput{Title: "here", ParentID: named.ID, Host: "local"}); kid.Host != "" {
		t.Errorf("child created --host local: host %q", kid.Host)
	}
	if got := env.get(named.ID); got.Host != "lb" {
		t.Errorf("task on lb read back: host %q", got.Host)
	}
	// Confined on a host (ADR 0062): bwrap is the host's to give, so it
	// is accepted whatever this machine has, and autopilot's default is
	// bwrap there; a container is the host's too (its engine and image
	// are checked when the run starts), so only the profile's lack of an
	// image refuses it here.
	for _, host := range []string{"lb", "auto"} {
		if boxed := env.create(api.CreateTaskInput{Title: "boxed", Host: host, Sandbox: core.SandboxBwrap}); boxed.Sandbox != core.SandboxBwrap {
			t.Errorf("bwrap on host %s: sandbox %q", host, boxed.Sandbox)
		}
		if ap := env.create(api.CreateTaskInput{Title: "autopilot", Host: host, Autopilot: true}); ap.Sandbox != core.SandboxBwrap {
			t.Errorf("autopilot on host %s: sandbox %q, want bwrap", host, ap.Sandbox)
		}
		_, err = env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "contained", CWD: env.cwd, Host: host, Sandbox: core.SandboxDocker})
		i2WantErr(t, err, core.CodeValidation, "sandbox docker needs an image")
	}
}
