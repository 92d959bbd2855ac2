package daemon_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// Every built-in profile confined as installed (issue 36): the mock agent
// installed under each built-in's command the way that agent is installed
// for real, run with no sandbox, under bubblewrap and in a docker
// container whose image `kandev image build` made from that install. In
// each cell the agent starts, lists kandev's MCP tools through its kandev
// mcp (confined with it), asks the operator a question that the operator
// answers, and is stopped, leaving no process or container of its
// session. A task whose --cwd is a subdirectory of a repository starts
// there under each, its whole worktree writable. The table is logged (and
// written to $KANDEV_MATRIX_OUT).

// install is one way an agent is installed, under root with home as the
// operator's home; it returns the directory to put on PATH.
type install struct {
	profile, how string
	make         func(t *testing.T, root, home, kandev, node string) string
}

// nodeLauncher is an npm package's launcher: it finds the agent through
// a package it requires (the SDK, or the platform package holding the
// native binary) and runs it as the real launchers run theirs.
func nodeLauncher(dep string) string {
	return "#!/usr/bin/env node\n" +
		"const dep = require(" + strconv.Quote(dep) + ");\n" +
		"const { spawn } = require('child_process');\n" +
		"const env = { ...process.env, KANDEV_MOCK_STATE_DIR: process.env.HOME + '/.mock-state' };\n" +
		"const c = spawn(dep.agent, ['mock-agent'], { stdio: 'inherit', env });\n" +
		"process.on('SIGTERM', () => c.kill('SIGTERM'));\n" +
		"c.on('exit', (code) => process.exit(code === null ? 1 : code));\n"
}

// pnpmShim is the shell shim pnpm writes for a package's bin (cmd-shim):
// node beside the shim if there is one, else node on PATH.
func pnpmShim(script string) string {
	return "#!/bin/sh\n" +
		`basedir=$(dirname "$(echo "$0" | sed -e 's,\\,/,g')")` + "\n\n" +
		"case `uname` in\n    *CYGWIN*) basedir=`cygpath -w \"$basedir\"`;;\nesac\n\n" +
		`if [ -x "$basedir/node" ]; then` + "\n" +
		`  exec "$basedir/node"  "$basedir/` + script + `" "$@"` + "\nelse\n" +
		`  exec node  "$basedir/` + script + `" "$@"` + "\nfi\n"
}

// linkOrCopy puts a real file at to with from's content: a hard link
// where they share a file system (the installed binaries are big), else
// a copy.
func linkOrCopy(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Link(from, to) == nil {
		return
	}
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, at string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, at); err != nil {
		t.Fatal(err)
	}
}

var installs = []install{
	{"claude", "npm install in a project (node_modules/.bin), the SDK a sibling package", func(t *testing.T, root, home, kandev, node string) string {
		modules := filepath.Join(root, "project", "node_modules")
		writeFiles(t, 0o755, map[string]string{
			filepath.Join(modules, "@agentclientprotocol", "claude-agent-acp", "dist", "index.js"): nodeLauncher("@anthropic-ai/claude-agent-sdk"),
			filepath.Join(modules, "@anthropic-ai", "claude-agent-sdk", "index.js"):                "module.exports = { agent: " + strconv.Quote(kandev) + " };\n",
		})
		symlink(t, "../@agentclientprotocol/claude-agent-acp/dist/index.js", filepath.Join(modules, ".bin", "claude-agent-acp"))
		return filepath.Join(modules, ".bin")
	}},
	{"codex", "npm install -g --prefix ~/.npm-global, the native binary in its platform package", func(t *testing.T, root, home, kandev, node string) string {
		prefix := filepath.Join(home, ".npm-global")
		pkg := filepath.Join(prefix, "lib", "node_modules", "@zed-industries", "codex-acp")
		native := filepath.Join(pkg, "node_modules", "@zed-industries", "codex-acp-linux-x64", "bin", "codex-acp")
		linkOrCopy(t, kandev, native)
		writeFiles(t, 0o755, map[string]string{
			filepath.Join(pkg, "bin", "codex-acp.js"):                     nodeLauncher("@zed-industries/codex-acp-linux-x64"),
			filepath.Join(filepath.Dir(filepath.Dir(native)), "index.js"): "module.exports = { agent: __dirname + '/bin/codex-acp' };\n",
		})
		symlink(t, "../lib/node_modules/@zed-industries/codex-acp/bin/codex-acp.js", filepath.Join(prefix, "bin", "codex-acp"))
		return filepath.Join(prefix, "bin")
	}},
	{"gemini", "nvm (~/.nvm/versions/node/vN: its own node, the CLI and its dependency in that prefix)", func(t *testing.T, root, home, kandev, node string) string {
		prefix := filepath.Join(home, ".nvm", "versions", "node", "v22.12.0")
		linkOrCopy(t, node, filepath.Join(prefix, "bin", "node"))
		cli := filepath.Join(prefix, "lib", "node_modules", "@google", "gemini-cli")
		writeFiles(t, 0o755, map[string]string{
			filepath.Join(cli, "dist", "index.js"):                                       nodeLauncher("@google/gemini-cli-core"),
			filepath.Join(cli, "node_modules", "@google", "gemini-cli-core", "index.js"): "module.exports = { agent: " + strconv.Quote(kandev) + " };\n",
		})
		symlink(t, "../lib/node_modules/@google/gemini-cli/dist/index.js", filepath.Join(prefix, "bin", "gemini"))
		return filepath.Join(prefix, "bin")
	}},
	{"qwen", "pnpm add -g (a shell shim in ~/.local/share/pnpm, the package in its .pnpm store)", func(t *testing.T, root, home, kandev, node string) string {
		pnpm := filepath.Join(home, ".local", "share", "pnpm")
		store := filepath.Join(pnpm, "global", "5", ".pnpm", "@qwen-code+qwen-code@0.4.0", "node_modules")
		writeFiles(t, 0o755, map[string]string{
			filepath.Join(store, "@qwen-code", "qwen-code", "cli.js"):        nodeLauncher("@qwen-code/qwen-code-core"),
			filepath.Join(store, "@qwen-code", "qwen-code-core", "index.js"): "module.exports = { agent: " + strconv.Quote(kandev) + " };\n",
			// pnpm's shim, as `pnpm add -g` writes it (cmd-shim).
			filepath.Join(pnpm, "qwen"): pnpmShim("global/5/node_modules/@qwen-code/qwen-code/cli.js"),
		})
		symlink(t, "../../.pnpm/@qwen-code+qwen-code@0.4.0/node_modules/@qwen-code/qwen-code",
			filepath.Join(pnpm, "global", "5", "node_modules", "@qwen-code", "qwen-code"))
		return pnpm
	}},
	{"opencode", "npm install -g --prefix ~/.local (~/.local/bin), the native binary in its platform package", func(t *testing.T, root, home, kandev, node string) string {
		prefix := filepath.Join(home, ".local")
		pkg := filepath.Join(prefix, "lib", "node_modules", "opencode-ai")
		native := filepath.Join(pkg, "node_modules", "opencode-linux-x64", "bin", "opencode")
		linkOrCopy(t, kandev, native)
		writeFiles(t, 0o755, map[string]string{
			filepath.Join(pkg, "bin", "opencode"):                         nodeLauncher("opencode-linux-x64"),
			filepath.Join(filepath.Dir(filepath.Dir(native)), "index.js"): "module.exports = { agent: __dirname + '/bin/opencode' };\n",
		})
		symlink(t, "../lib/node_modules/opencode-ai/bin/opencode", filepath.Join(prefix, "bin", "opencode"))
		return filepath.Join(prefix, "bin")
	}},
}

// matrixCell is what one profile did under one sandbox.
type matrixCell struct {
	starts, tools, answered, nothingLeft bool
}

func (c *matrixCell) String() string {
	mark := func(b bool) string {
		if b {
			return "yes"
		}
		return "NO"
	}
	return fmt.Sprintf("%s / %s / %s / %s", mark(c.starts), mark(c.tools), mark(c.answered), mark(c.nothingLeft))
}

func TestBuiltinProfilesConfinedAsInstalled(t *testing.T) {
	node := needNode(t)
	root, err := os.MkdirTemp("", "kdmatrix-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	home := filepath.Join(root, "home")
	kandev := daemontest.Binary(t)
	var path []string
	for _, in := range installs {
		path = append(path, in.make(t, root, home, kandev, node))
	}
	// The operator's own node stays on PATH after the installs (the nvm
	// one shadows it for gemini only through its #! lookup order).
	path = append(path, filepath.Dir(node), os.Getenv("PATH"))

	boxes := []string{core.SandboxNone, core.SandboxBwrap, core.SandboxDocker}
	cells := map[string]map[string]*matrixCell{}
	subdir := map[string]bool{}
	for _, box := range boxes {
		t.Run(box, func(t *testing.T) {
			env := []string{"HOME=" + home, "KANDEV_PERMISSION=allow", "PATH=" + strings.Join(path, ":")}
			var e engine
			switch box {
			case core.SandboxBwrap:
				needBwrap(t)
			case core.SandboxDocker:
				e = startEngine(t, box, false)
				env = append(env, e.env...)
			}
			d := daemontest.Start(t, daemontest.WithEnv(env...))
			if box == core.SandboxDocker {
				leaveNoContainer(t, e)
			}
			cells[box] = map[string]*matrixCell{}
			bt := t // the images outlive each profile's subtest: the last one uses claude's
			for _, in := range installs {
				t.Run(in.profile, func(t *testing.T) {
					if box == core.SandboxDocker {
						tag := fmt.Sprintf("kandev-test-%s:%d", in.profile, time.Now().UnixNano())
						res := d.Run("image", "build", in.profile, "--engine", box, "--tag", tag)
						if res.Code != 0 {
							t.Fatalf("image build %s: exit %d\n%s\n%s", in.profile, res.Code, res.Stdout, res.Stderr)
						}
						bt.Cleanup(func() { _ = e.command("rmi", "--force", tag).Run() })
					}
					c := &matrixCell{}
					cells[box][in.profile] = c
					confinedCell(t, d, e, c, in.profile, box, filepath.Join(root, "work", box, in.profile))
				})
			}
			t.Run("cwd in a repository", func(t *testing.T) {
				cwdInRepository(t, d, e, box)
				subdir[box] = true
			})
		})
	}

	var b strings.Builder
	fmt.Fprintf(&b, "starts / MCP tools listed / a question answered / stop leaves nothing\n")
	fmt.Fprintf(&b, "| profile | installed as | %s |\n|---|---|%s\n", strings.Join(boxes, " | "), strings.Repeat("---|", len(boxes)))
	for _, in := range installs {
		row := []string{}
		for _, box := range boxes {
			c, ok := cells[box][in.profile]
			switch {
			case !ok:
				row = append(row, "not run")
			default:
				row = append(row, c.String())
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", in.profile, in.how, strings.Join(row, " | "))
	}
	row := []string{}
	for _, box := range boxes {
		row = append(row, map[bool]string{true: "yes", false: "NO"}[subdir[box]])
	}
	fmt.Fprintf(&b, "| claude | --cwd a subdirectory of a repository: starts there, its whole worktree writable | %s |\n", strings.Join(row, " | "))
	t.Logf("built-in profiles confined as installed:\n%s", b.String())
	if out := os.Getenv("KANDEV_MATRIX_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// confinedCell runs one profile's agent under one sandbox through the
// four steps, failing the test at the first that does not hold.
func confinedCell(t *testing.T, d *daemontest.Daemon, e engine, c *matrixCell, profile, box, work string) {
	t.Helper()
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	task := create(t, d, api.CreateTaskInput{Title: profile + " " + box, Profile: profile, CWD: work, Sandbox: box, Start: true,
		Prompt: "mock: say ready as " + profile + "\nmock: tools\nmock: call ask_user_question_kandev " + askUserArgs("Which colour, "+profile+"?")})
	logTaskOnFailure(t, d, task.ID, nil)
	if task.Sandbox != box {
		t.Fatalf("sandbox %q, want %s", task.Sandbox, box)
	}
	waitSaid(t, d, task.ID, "ready as "+profile)
	c.starts = true
	waitSaid(t, d, task.ID, "tools: ")
	for _, text := range said(t, d, task.ID) {
		if _, tools, ok := strings.Cut(text, "tools: "); ok && strings.Contains(tools, "ask_user_question_kandev") && strings.Contains(tools, "create_task_kandev") {
			c.tools = true
		}
	}
	if !c.tools {
		t.Fatalf("the agent's MCP tools: %q", said(t, d, task.ID))
	}
	q := waitQuestion(t, d, task.ID)
	if !strings.Contains(q.Text, profile) {
		t.Fatalf("pending question %+v", q)
	}
	d.MustRun("task", "answer", task.ID, "blue for "+profile)
	waitSaid(t, d, task.ID, "blue for "+profile)
	c.answered = true

	got := get(t, d, task.ID)
	if got.Session == nil {
		t.Fatalf("no session: %+v", got)
	}
	sid := got.Session.ID
	d.MustRun("task", "stop", task.ID)
	daemontest.Eventually(t, wait, "no process of session "+sid+" left", func() bool { return len(agent.SessionProcs(sid)) == 0 })
	if box == core.SandboxDocker {
		daemontest.Eventually(t, wait, "no container of session "+sid+" left", func() bool { return len(kandevContainers(t, e, sid)) == 0 })
	}
	c.nothingLeft = true
}

// cwdInRepository: a task whose --cwd is a subdirectory of a repository
// starts there, confined as unconfined, with its whole worktree writable
// (the file it writes at the top is in the worktree on the host).
func cwdInRepository(t *testing.T, d *daemontest.Daemon, e engine, box string) {
	t.Helper()
	repo := gitRepo(t)
	task := create(t, d, api.CreateTaskInput{Title: "sub " + box, Profile: "claude", CWD: filepath.Join(repo, "sub"), Workspace: "worktree", Sandbox: box, Start: true,
		Prompt: "mock: sh pwd && touch ../top.txt && git status --short && echo wrote"})
	logTaskOnFailure(t, d, task.ID, nil)
	out := shSaid(t, d, task.ID, 1)
	got := get(t, d, task.ID)
	if got.Workspace == nil {
		t.Fatalf("no worktree: %+v", got)
	}
	top := got.Workspace.Dir
	if !strings.Contains(out, filepath.Join(top, "sub")+"\n") || !strings.Contains(out, "?? ../top.txt") || !strings.Contains(out, "wrote") {
		t.Fatalf("the agent did not start in the subdirectory and write the top of %s:\n%s", top, out)
	}
	if _, err := os.Stat(filepath.Join(top, "top.txt")); err != nil {
		t.Fatalf("the file the agent wrote at the top: %v", err)
	}
	sid := got.Session.ID
	d.MustRun("task", "stop", task.ID)
	daemontest.Eventually(t, wait, "no process of session "+sid+" left", func() bool { return len(agent.SessionProcs(sid)) == 0 })
	if box == core.SandboxDocker {
		daemontest.Eventually(t, wait, "no container of session "+sid+" left", func() bool { return len(kandevContainers(t, e, sid)) == 0 })
	}
}
