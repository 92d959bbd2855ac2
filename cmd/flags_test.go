package cmd

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// The flag tests build each command with a runF that keeps its options:
// what the arguments and flags parse to is checked without a daemon, and
// a usage mistake must be refused before runF.

// testFactory is a factory whose environment is env (and an empty
// config file), reading stdin from in.
func testFactory(t *testing.T, in string, env map[string]string) *Factory {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config.toml")
	getenv := func(k string) string {
		if k == "KANDEV_CONFIG" {
			return cfg
		}
		return env[k]
	}
	var out bytes.Buffer
	return &Factory{IO: IOStreams{In: strings.NewReader(in), Out: &out, ErrOut: &out}, Getenv: getenv}
}

// parse runs the command build makes on args with a runF that keeps the
// options; got is nil when runF was not reached.
func parse[T any](t *testing.T, f *Factory, build func(*Factory, func(*T) error) *cobra.Command, args ...string) (got *T, err error) {
	t.Helper()
	c := build(f, func(o *T) error { got = o; return nil })
	c.SetArgs(args)
	c.SetIn(f.IO.In)
	c.SetOut(io.Discard)
	c.SetErr(io.Discard)
	c.SilenceErrors, c.SilenceUsage = true, true
	err = c.Execute()
	if err != nil && got != nil {
		t.Fatalf("%v: runF was called and the command failed: %v", args, err)
	}
	return got, err
}

// mustParse is parse for arguments that are right.
func mustParse[T any](t *testing.T, f *Factory, build func(*Factory, func(*T) error) *cobra.Command, args ...string) *T {
	t.Helper()
	got, err := parse(t, f, build, args...)
	if err != nil || got == nil {
		t.Fatalf("%v: %v (runF reached: %v)", args, err, got != nil)
	}
	return got
}

// refused checks that args are a usage error that never reaches runF.
func refused[T any](t *testing.T, f *Factory, build func(*Factory, func(*T) error) *cobra.Command, want string, args ...string) {
	t.Helper()
	got, err := parse(t, f, build, args...)
	if got != nil || err == nil {
		t.Fatalf("%v: accepted, want a usage error", args)
	}
	var ue *UsageError
	if want != "" && (!errors.As(err, &ue) || !strings.Contains(err.Error(), want)) {
		t.Fatalf("%v: %v, want a usage error saying %q", args, err, want)
	}
}

func same(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: got %#v, want %#v", what, got, want)
	}
}

func TestNewCmdRoleFlags(t *testing.T) {
	f := testFactory(t, "", nil)
	add := mustParse(t, f, NewCmdRoleAdd, "lead", "--profile", "claude", "--reports-to", "alice")
	same(t, "role add", [3]string{add.Input.Name, add.Input.Profile, add.Input.ReportsTo}, [3]string{"lead", "claude", "alice"})
	refused(t, f, NewCmdRoleAdd, "--profile is required", "lead")

	edit := mustParse(t, f, NewCmdRoleEdit, "lead", "--no-manager")
	same(t, "role edit --no-manager", [2]string{edit.Name, edit.Input.ReportsTo}, [2]string{"lead", "-"})
	edit = mustParse(t, f, NewCmdRoleEdit, "lead", "--profile", "codex")
	same(t, "role edit --profile", edit.Input.Profile, "codex")
	refused(t, f, NewCmdRoleEdit, "not both", "lead", "--no-manager", "--reports-to", "bob")
	refused(t, f, NewCmdRoleEdit, "nothing to change", "lead")

	same(t, "role show", mustParse(t, f, NewCmdRoleShow, "lead").Name, "lead")
	same(t, "role remove", mustParse(t, f, NewCmdRoleRemove, "lead").Name, "lead")
	mustParse(t, f, NewCmdRoleList)
	refused(t, f, NewCmdRoleShow, "the role NAME")
}

func TestNewCmdPersonFlags(t *testing.T) {
	f := testFactory(t, "", nil)
	same(t, "person add", mustParse(t, f, NewCmdPersonAdd, "alice").Name, "alice")
	refused(t, f, NewCmdPersonAdd, "NAME")
	mustParse(t, f, NewCmdPersonList)
}

func TestNewCmdProfileFlags(t *testing.T) {
	f := testFactory(t, "", nil)
	add := mustParse(t, f, NewCmdProfileAdd, "opus", "--command", "claude-agent-acp", "--arg", "a", "--arg", "b c",
		"--env", "K=V", "--no-mcp", "--start-timeout", "3m")
	p := add.Profile
	same(t, "profile add", []any{p.Name, p.Command, p.Args, p.Env, p.MCP, p.StartTimeout},
		[]any{"opus", "claude-agent-acp", []string{"a", "b c"}, []string{"K=V"}, false, "3m"})
	if add = mustParse(t, f, NewCmdProfileAdd, "x", "--command", "y"); !add.Profile.MCP {
		t.Error("profile add without --no-mcp: MCP false")
	}
	refused(t, f, NewCmdProfileAdd, "--command is required", "opus", "--command", "  ")
	add = mustParse(t, f, NewCmdProfileAdd, "careful", "--command", "codex-acp", "--permission", "ask", "--autopilot-permission", "deny")
	same(t, "profile add --permission", [2]string{add.Profile.Permission, add.Profile.AutopilotPermission}, [2]string{"ask", "deny"})
	add = mustParse(t, f, NewCmdProfileAdd, "boxed", "--command", "claude-agent-acp", "--sandbox", "docker", "--image", "img:1",
		"--path", "~/.claude", "--path", "ro:/etc/x", "--no-network")
	same(t, "profile add --sandbox", []any{add.Profile.Sandbox, add.Profile.Image, add.Profile.Paths, add.Profile.NoNetwork},
		[]any{"docker", "img:1", []string{"~/.claude", "ro:/etc/x"}, true})
	add = mustParse(t, f, NewCmdProfileAdd, "local", "--command", "opencode", "--network", "default", "--forward", "11434", "--forward", "8080")
	same(t, "profile add --network --forward", []any{add.Profile.Network, add.Profile.Forwards}, []any{"", []int{11434, 8080}})
	same(t, "profile add --network host", mustParse(t, f, NewCmdProfileAdd, "h", "--command", "x", "--network", "host").Profile.Network, "host")
	refused(t, f, NewCmdProfileAdd, "want none, default or host", "n", "--command", "x", "--network", "bridge")
	refused(t, f, NewCmdProfileAdd, "", "n", "--command", "x", "--forward", "http")

	show := mustParse(t, f, NewCmdProfileShow, "opus", "--reveal")
	same(t, "profile show", [2]any{show.Name, show.Reveal}, [2]any{"opus", true})
	same(t, "profile remove", mustParse(t, f, NewCmdProfileRemove, "opus").Name, "opus")
	mustParse(t, f, NewCmdProfileList)
}

func TestNewCmdConfigFlags(t *testing.T) {
	f := testFactory(t, "", nil)
	same(t, "config get", mustParse(t, f, NewCmdConfigGet, "profile").Key, "profile")
	refused(t, f, NewCmdConfigGet, "unknown config key", "nope")
	set := mustParse(t, f, NewCmdConfigSet, "idle_timeout", "30m")
	same(t, "config set", [2]string{set.Key, set.Value}, [2]string{"idle_timeout", "30m"})
	same(t, "config unset", mustParse(t, f, NewCmdConfigUnset, "profile").Key, "profile")
	mustParse(t, f, NewCmdConfigList)
	mustParse(t, f, NewCmdConfigPath)
}

func TestNewCmdDaemonFlags(t *testing.T) {
	f := testFactory(t, "", nil)
	same(t, "daemon stop", mustParse(t, f, NewCmdDaemonStop, "--timeout", "3s").Timeout, 3*time.Second)
	same(t, "daemon restart", mustParse(t, f, NewCmdDaemonRestart, "--timeout", "2s").Timeout, 2*time.Second)
	mustParse(t, f, NewCmdDaemonStatus)
	refused(t, f, NewCmdDaemonStatus, "", "extra")
}

func TestNewCmdTopLevelFlags(t *testing.T) {
	f := testFactory(t, "", nil)
	w := mustParse(t, f, NewCmdWait, "k3f9qa", "--timeout", "90s")
	same(t, "wait", [2]any{w.ID, w.Timeout}, [2]any{"k3f9qa", 90 * time.Second})
	refused(t, f, NewCmdWait, "one task ID")

	same(t, "status --short", mustParse(t, f, NewCmdStatus, "--short").Short, true)
	fj := testFactory(t, "", nil)
	fj.JSON = true
	refused(t, fj, NewCmdStatus, "--short and --json", "--short")

	same(t, "doctor", mustParse(t, f, NewCmdDoctor, "--timeout", "1s").Timeout, time.Second)
	same(t, "events", mustParse(t, f, NewCmdEvents, "--task", "k3f9qa").TaskID, "k3f9qa")
	serve := mustParse(t, f, NewCmdServe, "--no-resume", "--background")
	same(t, "serve", [2]bool{serve.NoResume, serve.Background}, [2]bool{true, true})
	demo := mustParse(t, f, NewCmdDemo, "--keep", "--timeout", "2m")
	same(t, "demo", [2]any{demo.Keep, demo.Timeout}, [2]any{true, 2 * time.Minute})
	same(t, "worktree prune", mustParse(t, f, NewCmdWorktreePrune, "--dry-run").Input.DryRun, true)
	mustParse(t, f, NewCmdVersion)
	mustParse(t, f, NewCmdMCP)
	mustParse(t, f, NewCmdMockAgent)
	img := mustParse(t, f, NewCmdImageBuild, "claude", "--engine", "podman", "--tag", "t:1", "--with", "python3")
	same(t, "image build", []any{img.Profile, img.Engine, img.Tag, img.With}, []any{"claude", "podman", "t:1", []string{"python3"}})
	refused(t, f, NewCmdImageBuild, "want docker or podman", "claude", "--engine", "lxc")
	refused(t, f, NewCmdImageBuild, "PROFILE")
	fwd := mustParse(t, f, NewCmdSandboxForward, "--signals", "--port", "8080=/s", "--", "agent", "--acp")
	same(t, "sandbox-forward", [3]any{fwd.Signals, fwd.Ports, fwd.Command}, [3]any{true, []string{"8080=/s"}, []string{"agent", "--acp"}})
	refused(t, f, NewCmdSandboxForward, "after --", "--port", "1=/s", "agent")
	kr := mustParse(t, f, NewCmdKubeRelay, "serve", "/k/mcp.sock", "/k/relay.sock")
	same(t, "kube-relay", []any{kr.Mode, kr.Args}, []any{"serve", []string{"/k/mcp.sock", "/k/relay.sock"}})
	same(t, "kube-relay spare", mustParse(t, f, NewCmdKubeRelay, "spare", "/k/relay.sock").Mode, "spare")
	refused(t, f, NewCmdKubeRelay, "want serve", "spare")
	refused(t, f, NewCmdKubeRelay, "want serve", "listen", "/a", "/b")
	refused(t, f, NewCmdVersion, "", "extra")
}
