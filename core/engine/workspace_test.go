package engine_test

// Issue 11: where a new task works. Real repositories in temp dirs; no
// agent ever starts.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/capability"
)

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// newGitRepo makes env.dir/app, a repository with src/main.go committed.
func newGitRepo(t *testing.T, env *engineEnv) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	repo := filepath.Join(env.dir, "app")
	if err := os.MkdirAll(filepath.Join(repo, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, repo, "init", "-q", "-b", "main")
	gitT(t, repo, "config", "user.name", "Test")
	gitT(t, repo, "config", "user.email", "test@example.com")
	if err := os.WriteFile(filepath.Join(repo, "src", "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, repo, "add", ".")
	gitT(t, repo, "commit", "-q", "-m", "initial")
	return repo
}

func TestTaskInRepositoryGetsItsOwnWorktree(t *testing.T) {
	env := newEngineEnv(t)
	repo := newGitRepo(t, env)
	head := gitT(t, repo, "rev-parse", "HEAD")
	task, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "Fix the login", CWD: filepath.Join(repo, "src")})
	if err != nil {
		t.Fatal(err)
	}
	ws := task.Workspace
	wantDir := filepath.Join(env.dir, "worktrees", "app", task.ID)
	if ws == nil || ws.Mode != core.WorkspaceWorktree || ws.Repo != repo || ws.Dir != wantDir ||
		ws.Branch != "kandev/"+task.ID+"-fix-the-login" || ws.Base != head {
		t.Fatalf("workspace %+v; want a worktree at %s from %s", ws, wantDir, head)
	}
	// The agent starts at the same place inside the worktree.
	if task.CWD != filepath.Join(wantDir, "src") {
		t.Fatalf("cwd %s", task.CWD)
	}
	if got := gitT(t, task.CWD, "rev-parse", "--abbrev-ref", "HEAD"); got != ws.Branch {
		t.Fatalf("worktree on %s", got)
	}
	// Recorded: a restarted engine knows it.
	env.close()
	env.open()
	again, err := env.eng.Tasks.GetTask(env.ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if *again.Workspace != *ws || again.CWD != task.CWD {
		t.Fatalf("after reopen: %+v in %s", again.Workspace, again.CWD)
	}
}

func TestTaskWorkspaceOptions(t *testing.T) {
	env := newEngineEnv(t)
	repo := newGitRepo(t, env)
	first := gitT(t, repo, "rev-parse", "HEAD")
	if err := os.WriteFile(filepath.Join(repo, "later.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, repo, "add", ".")
	gitT(t, repo, "commit", "-q", "-m", "later")

	shared, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "shared", CWD: repo, Workspace: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	if shared.Workspace.Mode != core.WorkspaceShared || shared.CWD != repo || shared.Workspace.Dir != "" {
		t.Fatalf("shared: %+v in %s", shared.Workspace, shared.CWD)
	}
	outside, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "outside", CWD: env.cwd})
	if err != nil {
		t.Fatal(err)
	}
	if outside.Workspace.Mode != core.WorkspaceShared || outside.CWD != env.cwd {
		t.Fatalf("outside a repository: %+v in %s", outside.Workspace, outside.CWD)
	}
	named, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "named", CWD: repo, Base: first, Branch: "feature/login"})
	if err != nil {
		t.Fatal(err)
	}
	if named.Workspace.Branch != "feature/login" || named.Workspace.Base != first {
		t.Fatalf("named: %+v", named.Workspace)
	}
	if _, err := os.Stat(filepath.Join(named.CWD, "later.txt")); !os.IsNotExist(err) {
		t.Fatalf("worktree from %s has a later commit's file (err %v)", first, err)
	}
}

func TestTaskWorkspaceRefusalsCreateNothing(t *testing.T) {
	env := newEngineEnv(t)
	repo := newGitRepo(t, env)
	cases := []struct {
		name string
		in   api.CreateTaskInput
		want string
	}{
		{"worktree outside a repository", api.CreateTaskInput{Title: "a", CWD: env.cwd, Workspace: "worktree"}, "not inside a git repository"},
		{"missing base", api.CreateTaskInput{Title: "b", CWD: repo, Base: "no-such-ref"}, "no-such-ref"},
		{"existing branch", api.CreateTaskInput{Title: "c", CWD: repo, Branch: "main"}, "already exists"},
		{"unknown mode", api.CreateTaskInput{Title: "d", CWD: repo, Workspace: "cloud"}, "workspace"},
		{"base on shared", api.CreateTaskInput{Title: "e", CWD: repo, Workspace: "shared", Base: "main"}, "a base or branch"},
	}
	for _, c := range cases {
		_, err := env.eng.Tasks.CreateTask(env.ctx, c.in)
		if core.CodeOf(err) != core.CodeValidation || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v; want a validation error about %q", c.name, err, c.want)
		}
	}
	tasks, err := env.eng.Tasks.ListTasks(env.ctx, api.ListTasksInput{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 0 {
		t.Fatalf("refused creates made %d tasks", len(tasks))
	}
	if entries, _ := os.ReadDir(filepath.Join(env.dir, "worktrees", "app")); len(entries) != 0 {
		t.Fatalf("refused creates left worktrees: %v", entries)
	}
	if got := gitT(t, repo, "branch", "--list", "kandev/*"); got != "" {
		t.Fatalf("refused creates left branches: %q", got)
	}
}

func TestChildInheritsOrBranchesFromParentWorktree(t *testing.T) {
	env := newEngineEnv(t)
	repo := newGitRepo(t, env)
	parent, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "parent", CWD: repo})
	if err != nil {
		t.Fatal(err)
	}
	// The parent's work so far, committed on its branch.
	pw := parent.Workspace
	if err := os.WriteFile(filepath.Join(pw.Dir, "parent.txt"), []byte("p\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, pw.Dir, "add", ".")
	gitT(t, pw.Dir, "commit", "-q", "-m", "parent work")
	parentHead := gitT(t, pw.Dir, "rev-parse", "HEAD")

	inherit, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "helper", ParentID: parent.ID})
	if err != nil {
		t.Fatal(err)
	}
	if w := inherit.Workspace; w.Mode != core.WorkspaceInherit || w.Dir != pw.Dir || w.Branch != pw.Branch || inherit.CWD != parent.CWD {
		t.Fatalf("inherit: %+v in %s; parent %+v in %s", w, inherit.CWD, pw, parent.CWD)
	}
	// A child of the inheriting child inherits the same worktree.
	grand, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "grand", ParentID: inherit.ID})
	if err != nil {
		t.Fatal(err)
	}
	if grand.Workspace.Mode != core.WorkspaceInherit || grand.Workspace.Dir != pw.Dir {
		t.Fatalf("grandchild: %+v", grand.Workspace)
	}

	own, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "own", ParentID: parent.ID, Workspace: "new"})
	if err != nil {
		t.Fatal(err)
	}
	w := own.Workspace
	if w.Mode != core.WorkspaceWorktree || w.Dir == pw.Dir || w.Base != parentHead || w.Repo != repo {
		t.Fatalf("new: %+v; want its own worktree from the parent's head %s", w, parentHead)
	}
	if _, err := os.Stat(filepath.Join(own.CWD, "parent.txt")); err != nil {
		t.Fatalf("the child's worktree lacks the parent's work: %v", err)
	}
}

func TestMergeAndDiscardBelongToTheWorktreeOwner(t *testing.T) {
	env := newEngineEnv(t)
	repo := newGitRepo(t, env)
	parent, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "parent", CWD: repo})
	if err != nil {
		t.Fatal(err)
	}
	child, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "child", ParentID: parent.ID})
	if err != nil {
		t.Fatal(err)
	}
	shared, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "shared", CWD: repo, Workspace: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(child.CWD, "child.txt"), []byte("c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The child sees the work in the worktree it shares.
	d, err := env.eng.Workspaces.Diff(env.ctx, child.ID, api.DiffInput{})
	if err != nil || len(d.Files) != 1 || d.Files[0].Path != "child.txt" {
		t.Fatalf("child diff %+v, %v", d, err)
	}
	// It names the branch a merge would go into.
	if d.Into != "main" {
		t.Fatalf("diff into %q, want main", d.Into)
	}
	gitT(t, repo, "checkout", "-q", "--detach")
	if d, err := env.eng.Workspaces.Diff(env.ctx, child.ID, api.DiffInput{}); err != nil || d.Into != "" {
		t.Fatalf("diff with the main checkout detached: into %q, %v", d.Into, err)
	}
	gitT(t, repo, "checkout", "-q", "main")
	if _, err := env.eng.Workspaces.Merge(env.ctx, child.ID, api.MergeInput{}); core.CodeOf(err) != core.CodeValidation || !strings.Contains(err.Error(), "parent's worktree") {
		t.Fatalf("merge of an inheriting child: %v", err)
	}
	if _, err := env.eng.Workspaces.Discard(env.ctx, child.ID, api.DiscardTaskInput{}); core.CodeOf(err) != core.CodeValidation {
		t.Fatalf("discard of an inheriting child: %v", err)
	}
	if _, err := env.eng.Workspaces.Diff(env.ctx, shared.ID, api.DiffInput{}); core.CodeOf(err) != core.CodeValidation || !strings.Contains(err.Error(), "shared directory") {
		t.Fatalf("diff of a shared task: %v", err)
	}
	// Discarding the owner removes the worktree the child worked in too.
	got, err := env.eng.Workspaces.Discard(env.ctx, parent.ID, api.DiscardTaskInput{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Workspace.Mode != core.WorkspaceDiscarded {
		t.Fatalf("after discard: %+v", got.Workspace)
	}
	if _, err := os.Stat(parent.Workspace.Dir); !os.IsNotExist(err) {
		t.Fatalf("worktree still there: %v", err)
	}
	c, err := env.eng.Tasks.GetTask(env.ctx, child.ID)
	if err != nil || c.Workspace.Mode != core.WorkspaceDiscarded {
		t.Fatalf("child after discard: %+v, %v", c.Workspace, err)
	}
	if got := gitT(t, repo, "branch", "--list", parent.Workspace.Branch); got != "" {
		t.Fatalf("branch left: %q", got)
	}
}

// An agent's subtask (create_task_kandev) works in its parent's worktree
// unless it asks for a new one, which branches from the parent's branch
// or the base it names.
func TestAgentSubtaskWorkspace(t *testing.T) {
	env := newEngineEnv(t)
	repo := newGitRepo(t, env)
	parent, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "parent", CWD: repo})
	if err != nil {
		t.Fatal(err)
	}
	pw := parent.Workspace
	if err := os.WriteFile(filepath.Join(pw.Dir, "p.txt"), []byte("p\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, pw.Dir, "add", ".")
	gitT(t, pw.Dir, "commit", "-q", "-m", "parent work")
	parentHead := gitT(t, pw.Dir, "rev-parse", "HEAD")
	initial := gitT(t, repo, "rev-parse", "HEAD")

	agent := core.WithActor(env.ctx, core.Actor{Kind: core.ActorAgent, TaskID: parent.ID})
	create := func(args string) core.Task {
		t.Helper()
		res, err := env.eng.Tools.CallTool(agent, "create_task_kandev", []byte(args))
		if err != nil {
			t.Fatalf("create_task_kandev %s: %v", args, err)
		}
		task, ok := res.(core.Task)
		if !ok {
			t.Fatalf("create_task_kandev returned %T", res)
		}
		return task
	}
	// Even with a cwd of its own, an agent's subtask inherits by default.
	inherit := create(`{"title":"helper","start":false,"cwd":"` + pw.Dir + `"}`)
	if w := inherit.Workspace; w.Mode != core.WorkspaceInherit || w.Dir != pw.Dir || w.Branch != pw.Branch {
		t.Fatalf("inherit: %+v", w)
	}
	own := create(`{"title":"apart","start":false,"workspace":"new"}`)
	if w := own.Workspace; w.Mode != core.WorkspaceWorktree || w.Dir == pw.Dir || w.Base != parentHead {
		t.Fatalf("new: %+v; want its own worktree from %s", w, parentHead)
	}
	based := create(`{"title":"from main","start":false,"workspace":"new","base":"main"}`)
	if w := based.Workspace; w.Mode != core.WorkspaceWorktree || w.Base != initial {
		t.Fatalf("new from main: %+v; want base %s", w, initial)
	}
	if _, err := env.eng.Tools.CallTool(agent, "create_task_kandev", []byte(`{"title":"bad","start":false,"workspace":"elsewhere"}`)); core.CodeOf(err) != core.CodeValidation {
		t.Fatalf("workspace elsewhere: %v", err)
	}
	// get_task_kandev tells an agent where a task works: directory, branch, base.
	res, err := env.eng.Tools.CallTool(agent, "get_task_kandev", []byte(`{"task_id":"`+own.ID+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"dir":"` + own.Workspace.Dir + `"`, `"branch":"` + own.Workspace.Branch + `"`, `"base":"` + parentHead + `"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("get_task_kandev lacks %s: %s", want, b)
		}
	}
}

// get_task_diff_kandev: an agent reads its own task's diff and those of
// its subtree (the tasks it may act on and sign off), not a parent's or a
// stranger's; a patch over the bound is cut at a line with a marker, and
// the stat and totals still cover every file.
func TestTaskDiffToolSubtreeAndBound(t *testing.T) {
	env := newEngineEnv(t)
	repo := newGitRepo(t, env)
	parent, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "parent", CWD: repo})
	if err != nil {
		t.Fatal(err)
	}
	child, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "child", ParentID: parent.ID, Workspace: "new"})
	if err != nil {
		t.Fatal(err)
	}
	grand, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "grand", ParentID: child.ID, Workspace: "new"})
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "stranger", CWD: repo})
	if err != nil {
		t.Fatal(err)
	}
	// The child writes a small file and a big one (about 3x the bound).
	if err := os.WriteFile(filepath.Join(child.Workspace.Dir, "small.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var big strings.Builder
	for i := 0; big.Len() < 3*capability.MaxToolPatch; i++ {
		fmt.Fprintf(&big, "line %d of a large generated file\n", i)
	}
	if err := os.WriteFile(filepath.Join(child.Workspace.Dir, "zbig.txt"), []byte(big.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(grand.Workspace.Dir, "grand.txt"), []byte("g\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	call := func(as core.Task, args string) (api.TaskDiff, error) {
		t.Helper()
		ctx := core.WithActor(env.ctx, core.Actor{Kind: core.ActorAgent, TaskID: as.ID})
		res, err := env.eng.Tools.CallTool(ctx, "get_task_diff_kandev", []byte(args))
		if err != nil {
			return api.TaskDiff{}, err
		}
		d, ok := res.(api.TaskDiff)
		if !ok {
			t.Fatalf("get_task_diff_kandev returned %T", res)
		}
		return d, nil
	}

	d, err := call(parent, `{"task_id":"`+child.ID+`"}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != 2 || d.Files[0].Path != "small.txt" || d.Files[1].Path != "zbig.txt" || d.Branch != child.Workspace.Branch ||
		d.Dir != child.Workspace.Dir || d.Base != child.Workspace.Base {
		t.Fatalf("child's diff: files %+v, branch %s, dir %s, base %s", d.Files, d.Branch, d.Dir, d.Base)
	}
	if !d.Truncated || len(d.Patch) > capability.MaxToolPatch || d.PatchBytes <= 3*capability.MaxToolPatch {
		t.Fatalf("a patch of %d bytes: truncated %v, %d bytes returned (bound %d)", d.PatchBytes, d.Truncated, len(d.Patch), capability.MaxToolPatch)
	}
	if !strings.Contains(d.Patch, "+hello\n") || !strings.Contains(d.Stat, "zbig.txt") || d.Added != 1+strings.Count(big.String(), "\n") {
		t.Fatalf("cut patch lost the small file or the totals: added %d, stat %q", d.Added, d.Stat)
	}
	body, marker, ok := strings.Cut(d.Patch, "\n[kandev: patch cut at ")
	if !ok || !strings.HasSuffix(body, "\n") || !strings.Contains(marker, child.Workspace.Dir) || !strings.HasSuffix(marker, "]\n") {
		t.Fatalf("no line-aligned cut with a marker naming the worktree: ...%q", d.Patch[max(0, len(d.Patch)-400):])
	}
	if want := fmt.Sprintf("cut at %d of %d bytes", len(body), d.PatchBytes); !strings.Contains(d.Patch, want) {
		t.Errorf("marker lacks %q", want)
	}

	// The subtree: the root reads its grandchild's diff; stat_only has no patch.
	d, err = call(parent, `{"task_id":"`+grand.ID+`","stat_only":true}`)
	if err != nil || len(d.Files) != 1 || d.Files[0].Path != "grand.txt" || d.Patch != "" || d.Truncated {
		t.Fatalf("grandchild's stat: %+v, %v", d, err)
	}
	// Its own task, by default.
	if d, err = call(child, `{}`); err != nil || d.TaskID != child.ID {
		t.Fatalf("own diff: %+v, %v", d.TaskID, err)
	}
	// Not upwards, not sideways.
	for _, c := range []struct {
		as     core.Task
		target string
	}{{child, parent.ID}, {grand, child.ID}, {parent, stranger.ID}, {stranger, child.ID}} {
		if _, err := call(c.as, `{"task_id":"`+c.target+`"}`); core.CodeOf(err) != core.CodeForbidden {
			t.Errorf("task %s reading %s's diff: %v; want FORBIDDEN", c.as.Title, c.target, err)
		}
	}
	// The external surface has no such tool.
	ext := core.WithActor(env.ctx, core.Actor{Kind: core.ActorExternal})
	if _, err := env.eng.Tools.CallTool(ext, "get_task_diff_kandev", []byte(`{"task_id":"`+child.ID+`"}`)); core.CodeOf(err) != core.CodeForbidden {
		t.Errorf("external get_task_diff_kandev: %v", err)
	}
}

// ADR 0038: archiving a done task removes the worktree it owns unless a
// subtask that still works there (not finished, not archived) inherits
// it; the inheritors of a removed worktree show it retired too.
func TestArchiveDoneKeepsWorktreeASubtaskStillUses(t *testing.T) {
	env := newEngineEnv(t)
	repo := newGitRepo(t, env)
	mk := func(in api.CreateTaskInput) core.Task {
		t.Helper()
		task, err := env.eng.Tasks.CreateTask(env.ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	status := func(id string, s core.Status) {
		t.Helper()
		if _, err := env.eng.Tasks.SetTaskStatus(env.ctx, id, s); err != nil {
			t.Fatalf("%s -> %s: %v", id, s, err)
		}
	}
	busy := mk(api.CreateTaskInput{Title: "busy parent", CWD: repo})
	mk(api.CreateTaskInput{Title: "still working", ParentID: busy.ID})
	status(busy.ID, core.StatusDone)
	got, err := env.eng.Tasks.ArchiveTask(env.ctx, busy.ID, api.ArchiveTaskInput{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(busy.Workspace.Dir); err != nil || got.Workspace.Mode != core.WorkspaceWorktree {
		t.Fatalf("a worktree a subtask still works in was removed: %v, %+v", err, got.Workspace)
	}

	owner := mk(api.CreateTaskInput{Title: "owner", CWD: repo})
	helper := mk(api.CreateTaskInput{Title: "helper", ParentID: owner.ID})
	status(helper.ID, core.StatusDone)
	status(owner.ID, core.StatusDone)
	if got, err = env.eng.Tasks.ArchiveTask(env.ctx, owner.ID, api.ArchiveTaskInput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(owner.Workspace.Dir); !os.IsNotExist(err) || got.Workspace.Mode != core.WorkspaceRetired {
		t.Fatalf("done owner archived: worktree stat %v, %+v", err, got.Workspace)
	}
	h, err := env.eng.Tasks.GetTask(env.ctx, helper.ID)
	if err != nil || h.Workspace.Mode != core.WorkspaceRetired {
		t.Fatalf("inheriting helper after its owner's worktree went: %+v, %v", h.Workspace, err)
	}
	// A retired inheritor does not own the branch: discarding it is refused.
	if _, err := env.eng.Workspaces.Discard(env.ctx, helper.ID, api.DiscardTaskInput{}); core.CodeOf(err) != core.CodeValidation || !strings.Contains(err.Error(), "parent's worktree") {
		t.Fatalf("discard of a retired inheritor: %v", err)
	}
	// The branch has no commit of its own: git calls it merged, so it goes too.
	if out := gitT(t, repo, "branch", "--list", owner.Workspace.Branch); out != "" {
		t.Fatalf("an empty branch (merged: nothing of its own) stayed: %q", out)
	}
}
