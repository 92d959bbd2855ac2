package hosts

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kandev/kandev/core/sandbox"
)

// localSh runs a probe script as a host would, with this machine's sh.
func localSh(ctx context.Context, script string) (string, error) {
	cmd := exec.CommandContext(ctx, "sh", "-s")
	cmd.Stdin = strings.NewReader(script)
	out, err := cmd.Output()
	return string(out), err
}

// TestProbeFSMatchesOS: the view Describe builds from a host's answers
// (here this machine's sh answering the probe scripts) is the one it
// builds from the file system itself, for a worktree with its git
// directories, declared paths (one missing, one a dangling link), an
// agent found on PATH through a symlink whose #! is "env NAME", and odd
// characters in paths.
func TestProbeFSMatchesOS(t *testing.T) {
	root := t.TempDir()
	mk := func(p, body string, mode os.FileMode) string {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	home := filepath.Join(root, "home dir's")
	wt := filepath.Join(root, "kd/worktrees/abc")
	common := filepath.Join(root, "kd/repos/r.git")
	mk("kd/worktrees/abc/.git", "gitdir: "+common+"/worktrees/abc\n", 0o644)
	mk("kd/repos/r.git/worktrees/abc/gitdir", wt+"/.git\n", 0o644)
	mk("kd/repos/r.git/worktrees/abc/commondir", "../..\n", 0o644)
	mk("kd/repos/r.git/worktrees/zz/gitdir", root+"/elsewhere/.git\n", 0o644)
	mk("kd/repos/r.git/objects/.keep", "", 0o644)
	mk("kd/repos/r.git/refs/heads/kandev/other-task", "0\n", 0o644)
	mk("kd/repos/r.git/refs/heads/kandev/.hidden", "0\n", 0o644)
	mk("home dir's/.claude/settings.json", "{}", 0o600)
	if err := os.Symlink(filepath.Join(root, "nowhere"), filepath.Join(home, ".claude.json")); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "rt/bin")
	mk("rt/bin/nodeish", "\x7fELF\x00\x01binary\n", 0o755)
	agent := mk("rt/lib/agent/cli.js", "#!/usr/bin/env -S nodeish --flag\n", 0o755)
	mk("kd/bin/kandev", "", 0o755)
	if err := os.Symlink(agent, filepath.Join(bin, "agent")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))

	// As prepareSandbox does: every question asked in each round, the
	// first error returned after.
	input := func(fs sandbox.FS) (sandbox.Input, error) {
		g, gerr := sandbox.FindGitDirsFS(fs, common, wt, "kandev/abc-task")
		exe, xerr := fs.LookPath("agent")
		in := sandbox.Input{Mode: "bwrap", Worktree: wt, Git: g, PrivateHome: filepath.Join(root, "kd/sandboxes/t1/home"),
			OperatorHome: home, Paths: []string{"~/.claude", "ro:~/.claude.json", "~/.missing"},
			Executables: []string{exe}, SelfExe: filepath.Join(root, "kd/bin/kandev"), MCPSocket: filepath.Join(root, "kd/run/s1.sock"),
			SessionID: "s1", FS: fs}
		if gerr != nil {
			return in, gerr
		}
		return in, xerr
	}
	in, err := input(sandbox.OS{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := sandbox.Describe(in)
	if err != nil {
		t.Fatal(err)
	}

	fs := newProbeFS()
	var got sandbox.View
	rounds := 0
	err = fs.settle(context.Background(), func(ctx context.Context, s string) (string, error) {
		rounds++
		return localSh(ctx, s)
	}, func() error {
		in, err := input(fs)
		v, derr := sandbox.Describe(in)
		if err != nil {
			return err
		}
		got = v
		return derr
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("view from the probe:\n%+v\nfrom the file system:\n%+v", got.Mounts, want.Mounts)
	}
	if rounds > 5 {
		t.Errorf("%d rounds of questions, want at most 5", rounds)
	}
	// What the test relies on is really there: the agent's runtime, the
	// other branch read-only, the missing path skipped.
	for _, p := range []string{filepath.Join(root, "rt"),
		filepath.Join(common, "refs/heads/kandev/other-task"), filepath.Join(common, "refs/heads/kandev/.hidden")} {
		found := false
		for _, m := range got.Mounts {
			found = found || m.Path == p
		}
		if !found {
			t.Errorf("no mount at %s: %+v", p, got.Mounts)
		}
	}
}

// TestParseProbe: answers are told apart by their markers, whatever the
// values hold; a count that does not match the questions is an error.
func TestParseProbe(t *testing.T) {
	out, err := localSh(context.Background(), probeScript([]probeQ{{"env", "KANDEV_PROBE_T"}, {"exists", "/nonexistent/x"}, {"readdir", "/nonexistent"}}))
	if err != nil {
		t.Fatal(err)
	}
	as, err := parseProbe(out, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !as[0].ok || len(as[0].fields) != 1 || as[0].fields[0] != "" || as[1].ok || as[2].ok {
		t.Fatalf("answers %+v", as)
	}
	if _, err := parseProbe(out, 2); err == nil {
		t.Fatal("two answers expected of three: no error")
	}
}

// fakeHost is a Pool whose "ssh" runs the remote command with this
// machine's sh and a PATH of only the tools named: a host without
// bubblewrap, for prepareSandbox's refusal.
func fakeHost(t *testing.T, tools ...string) *Pool {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("no %s here", tool)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	ssh := filepath.Join(dir, "ssh")
	script := "#!" + sh + "\nfor a; do last=$a; done\ncase \" $* \" in *\" -O \"*|*\" -f \"*) exit 0;; esac\nPATH=" + bin + " exec " + sh + " -c \"$last\"\n"
	if err := os.WriteFile(ssh, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fake.sock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return &Pool{Dir: dir, SSH: ssh}
}

// TestPrepareSandboxRefuses: a host without bubblewrap, or without the
// container engine, gives a SandboxError naming what is missing, and nothing is
// left to launch confined.
func TestPrepareSandboxRefuses(t *testing.T) {
	p := fakeHost(t, "sh", "mkdir", "chmod", "readlink", "head", "tr", "cat")
	dir := t.TempDir()
	cwd := filepath.Join(dir, "worktrees", "task-x")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", dir)
	for mode, want := range map[string]string{
		"bwrap":  "sandbox bwrap on host fake: bubblewrap is not installed there",
		"docker": "sandbox docker on host fake: docker is not installed there",
	} {
		r := &Remote{Pool: p, Target: Target{Name: "fake", Dest: Dest{Host: "fake"}}, Sandbox: &Sandbox{Mode: mode, TaskID: "t1", Image: "img:1"}}
		err := r.prepareSandbox(context.Background(), dir, cwd, dir+"/bin/kandev")
		var se *SandboxError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a SandboxError saying %q", mode, err, want)
		}
		if r.sb != nil {
			t.Errorf("%s: a confinement was prepared", mode)
		}
	}
}

// TestHostSandboxShowsMCPServers: a profile's MCP servers found on the
// host's PATH have their runtime in the host's view, as the agent's has
// (ADR 0078); one not found adds nothing.
func TestHostSandboxShowsMCPServers(t *testing.T) {
	root := t.TempDir()
	prefix := filepath.Join(root, "tools")
	script := filepath.Join(prefix, "lib", "node_modules", "probe-mcp", "index.js")
	if err := os.MkdirAll(filepath.Dir(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(prefix, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(script, filepath.Join(prefix, "bin", "probe-mcp")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", filepath.Join(prefix, "bin")+":"+os.Getenv("PATH"))
	t.Setenv("HOME", filepath.Join(root, "home"))
	r := &Remote{Sandbox: &Sandbox{Mode: "docker", TaskID: "t1", Image: "img", Servers: []string{"probe-mcp", "not-installed-mcp"}}}
	fs := newProbeFS()
	var in sandbox.Input
	err := fs.settle(context.Background(), localSh, func() error {
		a := r.askSandbox(fs, filepath.Join(root, "kd"), "sh")
		var err error
		in, err = r.sandboxInput(fs, a, filepath.Join(root, "kd"), filepath.Join(root, "work"), "")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Executables) != 2 || in.Executables[1] != filepath.Join(prefix, "bin", "probe-mcp") {
		t.Fatalf("executables %v: want the agent's, then the server found", in.Executables)
	}
	v, err := sandbox.Describe(in)
	if err != nil {
		t.Fatal(err)
	}
	var shown bool
	for _, m := range v.Mounts {
		if m.Path == prefix {
			shown = true
		}
	}
	if !shown {
		t.Errorf("the server's install prefix %s is not in the view: %+v", prefix, v.Mounts)
	}
}
