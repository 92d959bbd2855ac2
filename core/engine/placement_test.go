package engine_test

import (
	"testing"

	"github.com/kandev/kandev/core"
)

// Placement's rules at creation (docs/hosts.md): --host auto needs a
// host; a task made with it stays "auto" until its first run places it;
// a subtask inherits its parent's host (auto too) unless given another;
// and a confined task is refused on a host, naming what is missing.
func TestHostPlacementRules(t *testing.T) {
	env := newEngineEnv(t)
	_, err := env.eng.CreateTask(env.ctx, core.CreateTaskInput{Title: "nowhere", CWD: env.cwd, Host: "auto"})
	i2WantErr(t, err, core.CodeValidation, "--host auto", "no hosts", "kandev host add")

	// Not dialled at add or create: the port is closed.
	if _, err := env.eng.AddHost(env.ctx, core.HostInput{Name: "lb", SSH: "nobody@127.0.0.1:1", MaxAgents: 1}); err != nil {
		t.Fatal(err)
	}
	auto := env.create(core.CreateTaskInput{Title: "auto", Host: "auto"})
	if auto.Host != "auto" {
		t.Fatalf("--host auto: host %q before its first run", auto.Host)
	}
	if kid := env.create(core.CreateTaskInput{Title: "kid", ParentID: auto.ID}); kid.Host != "auto" {
		t.Errorf("child of an auto task: host %q", kid.Host)
	}
	named := env.create(core.CreateTaskInput{Title: "named", Host: "lb"})
	if kid := env.create(core.CreateTaskInput{Title: "kid", ParentID: named.ID}); kid.Host != "lb" {
		t.Errorf("child of a task on lb: host %q", kid.Host)
	}
	if kid := env.create(core.CreateTaskInput{Title: "here", ParentID: named.ID, Host: "local"}); kid.Host != "" {
		t.Errorf("child created --host local: host %q", kid.Host)
	}
	if got := env.get(named.ID); got.Host != "lb" {
		t.Errorf("task on lb read back: host %q", got.Host)
	}
	if !haveBwrap() {
		return
	}
	for _, host := range []string{"lb", "auto"} {
		_, err = env.eng.CreateTask(env.ctx, core.CreateTaskInput{Title: "boxed", CWD: env.cwd, Host: host, Sandbox: core.SandboxBwrap})
		i2WantErr(t, err, core.CodeValidation, "sandbox bwrap on host "+host, "cannot confine an agent on a host")
	}
}
