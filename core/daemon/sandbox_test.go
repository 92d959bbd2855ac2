package daemon_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// Confined agents (issue 25, ADR 0048): a bwrap task's agent, through the
// real binary, tries with its own shell (mock: sh) what a prompt-injected
// agent would, and every rule of the host still holds.

// needBwrap skips where bubblewrap is missing or cannot make namespaces.
func needBwrap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap is not installed")
	}
	if out, err := exec.Command("bwrap", "--ro-bind", "/", "/", "--unshare-pid", "--proc", "/proc", "true").CombinedOutput(); err != nil {
		t.Skipf("bubblewrap cannot run here: %v %s", err, out)
	}
}

// boxEnv is an operator's home holding a secret, a git repository, and a
// daemon whose agents are allowed their tools.
type boxEnv struct {
	d      *daemontest.Daemon
	home   string // the operator's home
	repo   string
	secret string
	pwned  string // what any trick of the agent's would create on the host
}

func newBoxEnv(t *testing.T) *boxEnv {
	t.Helper()
	needBwrap(t)
	root, err := os.MkdirTemp("", "kdbox-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	e := &boxEnv{home: filepath.Join(root, "home"), repo: filepath.Join(root, "repo"), pwned: filepath.Join(root, "pwned")}
	e.secret = filepath.Join(e.home, ".ssh", "id_ed25519")
	if err := os.MkdirAll(filepath.Dir(e.secret), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.secret, []byte("operator's key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(e.repo, 0o755); err != nil {
		t.Fatal(err)
	}
	gitRun(t, e.repo, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(e.repo, "f.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, e.repo, "add", ".")
	gitRun(t, e.repo, "commit", "-q", "-m", "initial")
	e.d = daemontest.Start(t, daemontest.WithEnv("HOME="+e.home, "KANDEV_PERMISSION=allow",
		"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.com"))
	return e
}

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// shSaid waits for the turn to say "sh exit:" n times and returns what it
// said, joined.
func shSaid(t *testing.T, d *daemontest.Daemon, id string, n int) string {
	t.Helper()
	var all string
	daemontest.Eventually(t, wait, "the agent's commands", func() bool {
		all = strings.Join(said(t, d, id), "\n")
		return strings.Count(all, "sh exit:") >= n
	})
	return all
}

func TestBwrapConfinesTheAgent(t *testing.T) {
	e := newBoxEnv(t)
	d := e.d
	ctx := context.Background()
	// Another agent on the host, whose environment carries its token.
	other := create(t, d, api.CreateTaskInput{Title: "neighbour", CWD: e.repo, Workspace: "shared", Start: true,
		Prompt: "mock: say up\nmock: hang"})
	waitSaid(t, d, other.ID, "up")
	otherPID := get(t, d, other.ID).Session.PID
	sibling := create(t, d, api.CreateTaskInput{Title: "sibling", CWD: e.repo})
	siblingHead := gitRun(t, e.repo, "rev-parse", "refs/heads/"+sibling.Workspace.Branch)
	mainHead := gitRun(t, e.repo, "rev-parse", "main")

	script := strings.Join([]string{
		"mock: sh cat " + e.secret,
		"mock: sh ls -a " + e.home,
		"mock: sh echo x > " + filepath.Join(e.repo, "outside.txt"),
		"mock: sh echo x > /usr/kandev-test",
		"mock: sh ls " + d.Home.Dir,
		"mock: sh cat /proc/" + strconv.Itoa(otherPID) + "/environ",
		"mock: sh kill -0 " + strconv.Itoa(d.PID()),
		"mock: sh echo written > by-sh.txt && git add by-sh.txt && git commit -qm agent && echo committed",
		"mock: sh git update-ref refs/heads/main HEAD",
		"mock: sh git update-ref refs/heads/" + sibling.Workspace.Branch + " HEAD",
		"mock: sh git config core.fsmonitor 'touch " + e.pwned + "'",
		"mock: sh printf '#!/bin/sh\\ntouch " + e.pwned + "\\n' > " + filepath.Join(e.repo, ".git/hooks/post-merge"),
		"mock: sh echo 'gitdir: /tmp' > .git",
		"mock: sh mkdir -p .kandev && printf '#!/bin/sh\\ntouch " + e.pwned + "\\n' > .kandev/setup && chmod +x .kandev/setup && rm -f " + filepath.Join(e.repo, ".git/worktrees/*/kandev-setup-done"),
	}, "\n") + "\nmock: write by-write.txt hello\n" +
		call("create_task_kandev", map[string]any{"title": "escape", "sandbox": "none", "start": false}) + "\n" +
		call("get_task_kandev", map[string]any{}) + "\nmock: say all finished"
	task := create(t, d, api.CreateTaskInput{Title: "boxed", CWD: e.repo, Sandbox: core.SandboxBwrap, Start: true, Prompt: script})
	if task.Sandbox != core.SandboxBwrap {
		t.Fatalf("sandbox %q", task.Sandbox)
	}
	waitSaid(t, d, task.ID, "all finished")
	out := shSaid(t, d, task.ID, 14)
	for _, want := range []string{
		"No such file or directory", // the secret
		"Read-only file system",     // /usr
		"committed",
		"less confined than its parent task " + task.ID + "'s sandbox bwrap",
		`"sandbox":"bwrap"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the agent's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "operator's key") || strings.Contains(out, "\n.ssh\n") {
		t.Errorf("the agent read the operator's home:\n%s", out)
	}
	if strings.Contains(out, "kandev.sock") || strings.Contains(out, "kandev.db") {
		t.Errorf("the agent sees the kandev home:\n%s", out)
	}
	if strings.Contains(out, "KANDEV_SESSION_ID") || strings.Contains(out, "KANDEV_TOKEN") {
		t.Errorf("the agent read another agent's environment:\n%s", out)
	}
	// kill -0 of the daemon: no such process in its namespace.
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "sh: ") && strings.Contains(l, "kill") && i+1 < len(lines) && lines[i+1] == "sh exit: 0" {
			t.Errorf("the agent can signal the daemon: %s", l)
		}
	}
	if _, err := os.Stat(filepath.Join(e.repo, "outside.txt")); !os.IsNotExist(err) {
		t.Errorf("the agent wrote outside its worktree: %v", err)
	}
	if got := gitRun(t, e.repo, "rev-parse", "main"); got != mainHead {
		t.Errorf("main moved: %s -> %s", mainHead, got)
	}
	if got := gitRun(t, e.repo, "rev-parse", "refs/heads/"+sibling.Workspace.Branch); got != siblingHead {
		t.Errorf("another task's branch moved: %s -> %s", siblingHead, got)
	}

	// What it wrote in its worktree is its diff; its commit, written in
	// its own objects, is on its branch once kandev checked it in (at the
	// turn's end, or the diff's start: ADR 0065).
	diff, err := d.Client.TaskDiff(ctx, task.ID, api.DiffInput{})
	if err != nil {
		t.Fatal(err)
	}
	if got := gitRun(t, e.repo, "rev-parse", "refs/heads/"+task.Workspace.Branch); got == mainHead {
		t.Errorf("the agent's own commit is not on its branch")
	}
	var files []string
	for _, f := range diff.Files {
		files = append(files, f.Path)
	}
	if !strings.Contains(strings.Join(files, " "), "by-sh.txt") || !strings.Contains(strings.Join(files, " "), "by-write.txt") {
		t.Errorf("diff files %v", files)
	}
	// Stop, then merge and the user's own git status: nothing it planted runs.
	if _, err := d.Client.StopTask(ctx, task.ID, api.StopTaskInput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Client.StartTask(ctx, task.ID, api.StartTaskInput{Prompt: "mock: say again"}); err != nil {
		t.Fatal(err)
	}
	// The agent's words are written before its turn's end is recorded
	// (the streamed output is flushed first): merge refuses a task in a
	// turn, so wait for the turn to be over, not for what it said.
	waitSaid(t, d, task.ID, "again")
	waitSettled(t, d, task.ID)
	if _, err := d.Client.MergeTask(ctx, task.ID, api.MergeInput{}); err != nil {
		t.Fatalf("merge: %v", err)
	}
	gitRun(t, e.repo, "status")
	gitRun(t, task.Workspace.Dir, "status")
	if _, err := os.Stat(e.pwned); !os.IsNotExist(err) {
		t.Fatalf("something the agent wrote ran on the host: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(e.repo, "by-sh.txt")); err != nil || string(b) != "written\n" {
		t.Fatalf("merged work: %q %v", b, err)
	}
}

// Stop (stopped, then not_running), interrupt, a question, a restart
// with resume and kill -9 of the daemon behave as on the host, and
// nothing of the session is left.
func TestBwrapKeepsTheRules(t *testing.T) {
	e := newBoxEnv(t)
	d := e.d
	ctx := context.Background()
	box := func(title, prompt string) core.Task {
		return create(t, d, api.CreateTaskInput{Title: title, CWD: e.repo, Sandbox: core.SandboxBwrap, Start: true, Prompt: prompt})
	}
	t.Run("stop", func(t *testing.T) {
		task := box("stop", "mock: spawn-child\nmock: spawn-setsid\nmock: say up\nmock: hang")
		waitSaid(t, d, task.ID, "up")
		sid := get(t, d, task.ID).Session.ID
		if n := len(agent.SessionProcs(sid)); n < 3 {
			t.Fatalf("%d processes of the session visible from the host, want the agent and its helpers", n)
		}
		res, err := d.Client.StopTask(ctx, task.ID, api.StopTaskInput{})
		if err != nil || res.Result != "stopped" {
			t.Fatalf("stop: %+v %v", res, err)
		}
		if res, err = d.Client.StopTask(ctx, task.ID, api.StopTaskInput{}); err != nil || res.Result != "not_running" {
			t.Fatalf("second stop: %+v %v", res, err)
		}
		sessionGone(t, sid, "stop")
	})
	t.Run("interrupt", func(t *testing.T) {
		task := box("interrupt", "mock: say busy\nmock: hang")
		waitSaid(t, d, task.ID, "busy")
		if _, err := d.Client.MessageTask(ctx, task.ID, api.MessageInput{Text: "mock: say switched", Delivery: api.DeliveryInterrupt}); err != nil {
			t.Fatal(err)
		}
		waitSaid(t, d, task.ID, "switched")
	})
	t.Run("question", func(t *testing.T) {
		task := box("asks", call("ask_user_question_kandev", map[string]any{
			"questions": []map[string]any{{"prompt": "Which DB?", "options": []map[string]any{{"label": "sqlite"}, {"label": "postgres"}}}},
		}))
		q := waitQuestion(t, d, task.ID)
		d.MustRun("task", "answer", task.ID, "--option", "1")
		daemontest.Eventually(t, wait, "the answer", func() bool {
			for _, p := range prompts(conversation(t, d, task.ID)) {
				if strings.Contains(p, "answered your question "+q.ID) {
					return true
				}
			}
			return saidContains(t, d, task.ID, "sqlite")
		})
	})
	t.Run("restart-resume", func(t *testing.T) {
		task := box("resume", "mock: say first")
		waitSaid(t, d, task.ID, "first")
		waitSettled(t, d, task.ID)
		sid := get(t, d, task.ID).Session.ID
		d.Stop()
		sessionGone(t, sid, "shutdown")
		d.Restart()
		message(t, d, task.ID, "mock: history")
		daemontest.Eventually(t, wait, "the resumed history", func() bool {
			return saidContains(t, d, task.ID, "history: ")
		})
		if !saidContains(t, d, task.ID, " turn 2; earlier: ") {
			t.Fatalf("not resumed: %q", said(t, d, task.ID))
		}
	})
	t.Run("kill-9", func(t *testing.T) {
		task := box("orphans", "mock: spawn-child\nmock: spawn-setsid\nmock: say up\nmock: hang")
		waitSaid(t, d, task.ID, "up")
		sid := get(t, d, task.ID).Session.ID
		t.Cleanup(func() {
			for _, pid := range agent.SessionProcs(sid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		})
		d.Kill9()
		d.Restart()
		sessionGone(t, sid, "restart recovery")
	})
}

// The built-in claude profile under bwrap: its command is found where npm
// put it under the operator's home (with the runtime it runs from), and
// its declared paths (~/.claude, ~/.claude.json) are there, read-write,
// while the rest of the home is not. The real Claude Code needs its model
// to run a turn; a script in its place runs the mock agent, as far as a
// test without the model can go.
func TestBwrapBuiltinClaudeProfile(t *testing.T) {
	needBwrap(t)
	root, err := os.MkdirTemp("", "kdclaude-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	home := filepath.Join(root, "home")
	bin := filepath.Join(home, ".local", "bin")
	for _, dir := range []string{bin, filepath.Join(home, ".claude"), filepath.Join(home, ".ssh")} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(home, ".claude", ".credentials.json"): `{"token":"claude's own"}`,
		filepath.Join(home, ".claude.json"):                 `{"numStartups":1}`,
		filepath.Join(home, ".ssh", "id_ed25519"):           "operator's key",
		// npm's bin entry, a script run by a runtime under the home.
		filepath.Join(bin, "claude-agent-acp"): "#!/bin/sh\nexport KANDEV_MOCK_STATE_DIR=\"$HOME/.claude/mock-state\"\nexec " + daemontest.Binary(t) + " mock-agent \"$@\"\n",
	}
	for p, body := range files {
		if err := os.WriteFile(p, []byte(body), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	d := daemontest.Start(t, daemontest.WithEnv("HOME="+home, "KANDEV_PERMISSION=allow", "PATH="+bin+":"+os.Getenv("PATH")))
	task := create(t, d, api.CreateTaskInput{Title: "claude", Profile: "claude", CWD: root, Sandbox: core.SandboxBwrap, Start: true,
		Prompt: "mock: sh cat ~/.claude/.credentials.json ~/.claude.json; echo; ls -a ~\nmock: sh echo kept > ~/.claude/note && cat ~/.ssh/id_ed25519"})
	out := shSaid(t, d, task.ID, 2)
	if !strings.Contains(out, `{"token":"claude's own"}`) || !strings.Contains(out, `{"numStartups":1}`) {
		t.Errorf("claude's declared files are not readable:\n%s", out)
	}
	if strings.Contains(out, "operator's key") || strings.Contains(out, "\n.ssh\n") {
		t.Errorf("claude's session sees the rest of the home:\n%s", out)
	}
	if b, err := os.ReadFile(filepath.Join(home, ".claude", "note")); err != nil || string(b) != "kept\n" {
		t.Errorf("~/.claude is not writable through: %q %v", b, err)
	}
}

// A confined task shared in the main checkout itself writes its files but
// not the repository's config or hooks, which the operator's next git
// command there would run.
func TestBwrapSharedCheckoutKeepsGitConfig(t *testing.T) {
	e := newBoxEnv(t)
	task := create(t, e.d, api.CreateTaskInput{Title: "shared", CWD: e.repo, Workspace: "shared", Sandbox: core.SandboxBwrap, Start: true,
		Prompt: "mock: sh git config core.fsmonitor 'touch " + e.pwned + "'\n" +
			"mock: sh printf '#!/bin/sh\\ntouch " + e.pwned + "\\n' > .git/hooks/post-checkout\n" +
			"mock: sh echo mine > work.txt && echo wrote"})
	out := shSaid(t, e.d, task.ID, 3)
	// The config's rename and the hook's write are refused; the file is written.
	if strings.Count(out, "sh exit: 0") != 1 || !strings.Contains(out, "wrote") {
		t.Fatalf("the agent's output:\n%s", out)
	}
	gitRun(t, e.repo, "status")
	gitRun(t, e.repo, "checkout", "-q", "-b", "after")
	if _, err := os.Stat(e.pwned); !os.IsNotExist(err) {
		t.Fatalf("something the agent wrote ran on the host: %v", err)
	}
}

// A task whose --cwd is a subdirectory of a repository runs confined as
// it would unconfined: it starts in the subdirectory, the whole worktree
// (or, shared, the whole checkout) is writable, git works, and a shared
// checkout's .git stays guarded. Before, bwrap looked for <cwd>/.git and
// the run could not start; shared, only the subdirectory was writable.
func TestBwrapCwdInsideRepository(t *testing.T) {
	e := newBoxEnv(t)
	sub := filepath.Join(e.repo, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "s.txt"), []byte("s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, e.repo, "add", ".")
	gitRun(t, e.repo, "commit", "-q", "-m", "sub")
	for _, ws := range []string{"worktree", "shared"} {
		t.Run(ws, func(t *testing.T) {
			task := create(t, e.d, api.CreateTaskInput{Title: "in sub " + ws, CWD: sub, Workspace: ws, Sandbox: core.SandboxBwrap, Start: true,
				Prompt: "mock: sh pwd && touch ../top-" + ws + ".txt && git status --short && echo wrote\n" +
					"mock: sh git config core.fsmonitor 'touch " + e.pwned + "'"})
			logTaskOnFailure(t, e.d, task.ID, nil)
			out := shSaid(t, e.d, task.ID, 2)
			top := e.repo
			if ws == "worktree" {
				top = get(t, e.d, task.ID).Workspace.Dir
			}
			if !strings.Contains(out, filepath.Join(top, "sub")+"\n") || !strings.Contains(out, "?? ../top-"+ws+".txt") || !strings.Contains(out, "wrote") {
				t.Fatalf("the agent did not start in the subdirectory and write the top of %s:\n%s", top, out)
			}
			if _, err := os.Stat(filepath.Join(top, "top-"+ws+".txt")); err != nil {
				t.Fatalf("the file the agent wrote at the top: %v", err)
			}
			if strings.Count(out, "sh exit: 0") != 1 {
				t.Fatalf("the repository's config was writable from inside:\n%s", out)
			}
		})
	}
	gitRun(t, e.repo, "status")
	if _, err := os.Stat(e.pwned); !os.IsNotExist(err) {
		t.Fatalf("something the agent wrote ran on the host: %v", err)
	}
}

// Claude Code's ACP adapter installed with npm into a project directory
// (node_modules/.bin/claude-agent-acp, a link into its package, which
// requires the SDK package beside it) starts under bwrap: the sandbox
// holds the whole module tree, not only .bin and the link's target
// ("Cannot find package '@anthropic-ai/claude-agent-sdk'" before). A node
// launcher stands in for the adapter and runs the mock agent.
func TestBwrapLocalNodeInstall(t *testing.T) {
	needBwrap(t)
	node := needNode(t)
	root, err := os.MkdirTemp("", "kdnode-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	home := filepath.Join(root, "home")
	modules := filepath.Join(root, "tools", "node_modules")
	adapter := filepath.Join(modules, "@agentclientprotocol", "claude-agent-acp", "dist", "index.js")
	files := map[string]string{
		adapter: "#!/usr/bin/env node\n" +
			"const sdk = require('@anthropic-ai/claude-agent-sdk');\n" +
			"const { spawn } = require('child_process');\n" +
			"const env = { ...process.env, KANDEV_MOCK_STATE_DIR: process.env.HOME + '/.claude/mock-state' };\n" +
			"const c = spawn(sdk.agent, ['mock-agent', ...process.argv.slice(2)], { stdio: 'inherit', env });\n" +
			"c.on('exit', (code) => process.exit(code === null ? 1 : code));\n",
		filepath.Join(modules, "@anthropic-ai", "claude-agent-sdk", "index.js"): "module.exports = { agent: " + strconv.Quote(daemontest.Binary(t)) + " };\n",
		filepath.Join(home, ".claude", ".keep"):                                 "",
	}
	writeFiles(t, 0o755, files)
	bin := filepath.Join(modules, ".bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../@agentclientprotocol/claude-agent-acp/dist/index.js", filepath.Join(bin, "claude-agent-acp")); err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, daemontest.WithEnv("HOME="+home, "KANDEV_PERMISSION=allow",
		"PATH="+bin+":"+filepath.Dir(node)+":"+os.Getenv("PATH")))
	work := filepath.Join(root, "work") // apart from the tools: the worktree is writable, so visible
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	task := create(t, d, api.CreateTaskInput{Title: "local install", Profile: "claude", CWD: work, Sandbox: core.SandboxBwrap, Start: true,
		Prompt: "mock: sh echo started from node_modules"})
	logTaskOnFailure(t, d, task.ID, nil)
	if out := shSaid(t, d, task.ID, 1); !strings.Contains(out, "started from node_modules") {
		t.Fatalf("the agent's output:\n%s", out)
	}
}
