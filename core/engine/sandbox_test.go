package engine_test

import (
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

func haveBwrap() bool { _, err := exec.LookPath("bwrap"); return err == nil }

// ADR 0048: a normal task runs on the host unless asked; an autopilot
// task is confined by bubblewrap where it is installed; the setting is
// kept, shown, and survives a restart.
func TestSandboxDefaults(t *testing.T) {
	env := newEngineEnv(t)
	plain := env.create(api.CreateTaskInput{Title: "plain"})
	auto := env.create(api.CreateTaskInput{Title: "auto", Autopilot: true})
	if plain.Sandbox != core.SandboxNone {
		t.Errorf("normal task: sandbox %q, want none", plain.Sandbox)
	}
	want := core.SandboxNone
	if haveBwrap() {
		want = core.SandboxBwrap
	}
	if auto.Sandbox != want {
		t.Errorf("autopilot task: sandbox %q, want %s", auto.Sandbox, want)
	}
	env.restart()
	if got := env.get(auto.ID); got.Sandbox != want {
		t.Errorf("after restart: sandbox %q", got.Sandbox)
	}
	b, _ := json.Marshal(env.get(plain.ID))
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m["sandbox"] != "none" {
		t.Errorf("--json lacks sandbox none: %s", b)
	}
}

// Without bubblewrap the autopilot default falls back to none, and asking
// for bwrap is refused with how to install it.
func TestSandboxWithoutBwrap(t *testing.T) {
	env := newEngineEnv(t)
	t.Setenv("PATH", t.TempDir())
	auto := env.create(api.CreateTaskInput{Title: "auto", Autopilot: true})
	if auto.Sandbox != core.SandboxNone {
		t.Errorf("autopilot without bwrap: sandbox %q", auto.Sandbox)
	}
	_, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "boxed", CWD: env.cwd, Sandbox: core.SandboxBwrap})
	i2WantErr(t, err, core.CodeValidation, "bubblewrap", "apt-get install bubblewrap")
	_, err = env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "boxed", CWD: env.cwd, Sandbox: "chroot"})
	i2WantErr(t, err, core.CodeValidation, `sandbox "chroot"`, "none, bwrap, docker, podman")
}

// A child is never less confined than its parent: one created without a
// sandbox takes its parent's, a weaker one is refused naming both, by the
// CLI's path and by an agent's create_task_kandev.
func TestSandboxChildNeverWeaker(t *testing.T) {
	if !haveBwrap() {
		t.Skip("bubblewrap is not installed")
	}
	env := newEngineEnv(t)
	root := env.create(api.CreateTaskInput{Title: "root", Sandbox: core.SandboxBwrap})
	child := env.create(api.CreateTaskInput{Title: "child", ParentID: root.ID})
	if child.Sandbox != core.SandboxBwrap {
		t.Fatalf("child without one: sandbox %q, want bwrap", child.Sandbox)
	}
	_, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "weak", ParentID: root.ID, Sandbox: core.SandboxNone})
	i2WantErr(t, err, core.CodeValidation, "sandbox none is less confined than its parent task "+root.ID+"'s sandbox bwrap")

	agent := core.WithActor(env.ctx, core.Actor{Kind: core.ActorAgent, TaskID: child.ID, SessionID: "s-" + child.ID})
	_, err = env.eng.Tools.CallTool(agent, "create_task_kandev", []byte(`{"title":"escape","sandbox":"none","start":false}`))
	i2WantErr(t, err, core.CodeValidation, "less confined", child.ID)
	res, err := env.eng.Tools.CallTool(agent, "create_task_kandev", []byte(`{"title":"helper","start":false}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.(core.Task); got.Sandbox != core.SandboxBwrap {
		t.Fatalf("an agent's child: sandbox %q", got.Sandbox)
	}
	// Nor can it widen its profiles.
	_, err = env.eng.Roles.AddProfile(agent, core.Profile{Name: "wide", Command: "x", MCP: true, Paths: []string{"~"}})
	i2WantErr(t, err, core.CodeForbidden, "sandbox bwrap")
}

// A profile's sandbox is its new tasks' default; a weaker explicit one on
// a top-level task is the creator's choice.
func TestSandboxFromProfile(t *testing.T) {
	if !haveBwrap() {
		t.Skip("bubblewrap is not installed")
	}
	env := newEngineEnv(t)
	if _, err := env.eng.Roles.AddProfile(env.ctx, core.Profile{Name: "boxed", Command: "x", MCP: true, Sandbox: core.SandboxBwrap}); err != nil {
		t.Fatal(err)
	}
	got := env.create(api.CreateTaskInput{Title: "t", Profile: "boxed"})
	if got.Sandbox != core.SandboxBwrap {
		t.Fatalf("profile's sandbox not taken: %q", got.Sandbox)
	}
	got = env.create(api.CreateTaskInput{Title: "t", Profile: "boxed", Sandbox: core.SandboxNone})
	if got.Sandbox != core.SandboxNone {
		t.Fatalf("explicit none: %q", got.Sandbox)
	}
	_, err := env.eng.Roles.AddProfile(env.ctx, core.Profile{Name: "bad", Command: "x", Sandbox: "vm"})
	i2WantErr(t, err, core.CodeValidation, `sandbox "vm"`)
}

// A container sandbox needs its profile's image: refused at create.
func TestSandboxContainerNeedsAnImage(t *testing.T) {
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("docker is not installed")
	}
	env := newEngineEnv(t)
	_, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "boxed", CWD: env.cwd, Sandbox: core.SandboxDocker})
	i2WantErr(t, err, core.CodeValidation, "needs an image", "--image IMAGE")
}
