package engine_test

// Issue 20: a prune removes only what it can prove no task owns, and never
// work (ADR 0042). Real repositories in temp dirs; no agent ever starts.

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/engine"
	"github.com/kandev/kandev/core/workspace"
	"github.com/kandev/kandev/store"
)

// openAt opens an engine over the store at dbPath with the given home.
func openAt(t *testing.T, env *engineEnv, dbPath, home string) *engine.Engine {
	t.Helper()
	db, err := store.Open(env.ctx, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(env.ctx, engine.Options{DB: db, Home: core.Home{Dir: home}})
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(); db.Close() })
	return eng
}

func branchExists(t *testing.T, repo, branch string) bool {
	t.Helper()
	return gitT(t, repo, "branch", "--list", branch) != ""
}

// workingTasks makes two worktree tasks: one with uncommitted work, one
// with a commit on its branch.
func workingTasks(t *testing.T, env *engineEnv, repo string) []core.Task {
	t.Helper()
	a := env.create(api.CreateTaskInput{Title: "dirty", CWD: repo})
	b := env.create(api.CreateTaskInput{Title: "committed", CWD: repo})
	if err := os.WriteFile(filepath.Join(a.Workspace.Dir, "wip.txt"), []byte("unsaved\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.Workspace.Dir, "done.txt"), []byte("done\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, b.Workspace.Dir, "add", ".")
	gitT(t, b.Workspace.Dir, "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-q", "-m", "work")
	return []core.Task{a, b}
}

func TestPruneThroughALinkToTheHomeKeepsEveryWorktree(t *testing.T) {
	env := newEngineEnv(t)
	repo := newGitRepo(t, env)
	tasks := workingTasks(t, env, repo)
	env.close()

	// The daemon runs with another spelling of the same home.
	link := filepath.Join(t.TempDir(), "home-link")
	if err := os.Symlink(env.dir, link); err != nil {
		t.Fatal(err)
	}
	eng := openAt(t, env, filepath.Join(link, "kandev.db"), link)
	dry, err := eng.Workspaces.Prune(env.ctx, api.PruneInput{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(dry.Removed) != 0 || len(dry.Branches) != 0 || len(dry.Entries) != 0 {
		t.Fatalf("dry run through a link would remove %v and branches %v (%+v)", dry.Removed, dry.Branches, dry.Entries)
	}
	res, err := eng.Workspaces.Prune(env.ctx, api.PruneInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Removed) != 0 || len(res.Branches) != 0 {
		t.Fatalf("prune through a link removed %v and branches %v", res.Removed, res.Branches)
	}
	for _, tk := range tasks {
		if _, err := os.Stat(tk.Workspace.Dir); err != nil {
			t.Fatalf("task %s's worktree: %v", tk.ID, err)
		}
		if !branchExists(t, repo, tk.Workspace.Branch) {
			t.Fatalf("task %s's branch %s is gone", tk.ID, tk.Workspace.Branch)
		}
	}
	if b, err := os.ReadFile(filepath.Join(tasks[0].Workspace.Dir, "wip.txt")); err != nil || string(b) != "unsaved\n" {
		t.Fatalf("uncommitted work: %q, %v", b, err)
	}
	// A task made through the link records the resolved spelling.
	tk, err := eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "third", CWD: filepath.Join(link, "app")})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tk.Workspace.Dir, env.dir+string(filepath.Separator)) || tk.Workspace.Repo != repo || tk.CWD != tk.Workspace.Dir {
		t.Fatalf("made through a link: %+v in %s; want everything under %s", tk.Workspace, tk.CWD, env.dir)
	}
}

func TestPruneRefusesWhenTheHomeMoved(t *testing.T) {
	env := newEngineEnv(t)
	repo := newGitRepo(t, env)
	tasks := workingTasks(t, env, repo)
	env.close()

	moved := filepath.Join(t.TempDir(), "moved-home")
	if err := os.Rename(env.dir, moved); err != nil {
		t.Fatal(err)
	}
	eng := openAt(t, env, filepath.Join(moved, "kandev.db"), moved)
	for _, dry := range []bool{true, false} {
		_, err := eng.Workspaces.Prune(env.ctx, api.PruneInput{DryRun: dry})
		i2WantErr(t, err, core.CodeConflict, "prune refused", tasks[0].Workspace.Dir)
	}
	for _, tk := range tasks {
		dir := filepath.Join(moved, "worktrees", "app", tk.ID)
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("task %s's moved worktree: %v", tk.ID, err)
		}
		if !branchExists(t, filepath.Join(moved, "app"), tk.Workspace.Branch) {
			t.Fatalf("branch %s is gone", tk.Workspace.Branch)
		}
	}
	if _, err := os.Stat(filepath.Join(moved, "worktrees", "app", tasks[0].ID, "wip.txt")); err != nil {
		t.Fatal(err)
	}
}

func TestPruneKeepsWorkUnlessForcedByName(t *testing.T) {
	env := newEngineEnv(t)
	repo := newGitRepo(t, env)
	owned := env.create(api.CreateTaskInput{Title: "owned", CWD: repo})
	m := &workspace.Manager{}
	orphan := func(id string) workspace.Worktree {
		t.Helper()
		wt, err := m.Create(env.ctx, workspace.CreateOptions{Repo: repo, Dir: workspace.Dir(env.dir, repo, id), Branch: "kandev/" + id})
		if err != nil {
			t.Fatal(err)
		}
		return wt
	}
	clean, dirty, ahead := orphan("orphclean"), orphan("orphdirty"), orphan("orphahead")
	if err := os.WriteFile(filepath.Join(dirty.Dir, "wip.txt"), []byte("unsaved\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ahead.Dir, "new.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, ahead.Dir, "add", ".")
	gitT(t, ahead.Dir, "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-q", "-m", "unique")
	stray := filepath.Join(env.dir, "worktrees", "app", "strayid")
	if err := os.MkdirAll(stray, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stray, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	dry, err := env.eng.Workspaces.Prune(env.ctx, api.PruneInput{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ // name → action and a word of why
		clean.Dir: "remove no task has id orphclean", clean.Branch: "remove",
		dirty.Dir: "keep uncommitted changes", dirty.Branch: "keep checked out",
		ahead.Dir: "remove no task", ahead.Branch: "keep 1 commits no other branch has",
		stray: "keep not a git worktree",
	}
	if len(dry.Entries) != len(want) {
		t.Fatalf("entries %+v", dry.Entries)
	}
	for _, e := range dry.Entries {
		w, ok := want[e.Name]
		action, why, _ := strings.Cut(w, " ")
		if !ok || e.Action != action || !strings.Contains(e.Why, why) {
			t.Fatalf("entry %+v; want %q", e, w)
		}
		if e.Name == owned.Workspace.Dir {
			t.Fatalf("the owned worktree is listed: %+v", e)
		}
	}
	for _, d := range []string{clean.Dir, dirty.Dir, ahead.Dir, stray} {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("dry run removed %s", d)
		}
	}

	// A mistyped --force is no consent: nothing happens.
	_, err = env.eng.Workspaces.Prune(env.ctx, api.PruneInput{Force: []string{dirty.Dir + "x"}})
	i2WantErr(t, err, core.CodeValidation, "--force")
	if _, err := os.Stat(clean.Dir); err != nil {
		t.Fatal("a refused prune removed a worktree")
	}

	res, err := env.eng.Workspaces.Prune(env.ctx, api.PruneInput{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Removed, ",") != strings.Join([]string{ahead.Dir, clean.Dir}, ",") || strings.Join(res.Branches, ",") != clean.Branch {
		t.Fatalf("removed %v, branches %v", res.Removed, res.Branches)
	}
	if b, err := os.ReadFile(filepath.Join(dirty.Dir, "wip.txt")); err != nil || string(b) != "unsaved\n" {
		t.Fatalf("dirty orphan's work: %q %v", b, err)
	}
	if !branchExists(t, repo, ahead.Branch) || !branchExists(t, repo, dirty.Branch) || branchExists(t, repo, clean.Branch) {
		t.Fatal("branches: want ahead and dirty kept, clean deleted")
	}
	if _, err := os.Stat(filepath.Join(stray, "notes.txt")); err != nil {
		t.Fatal("the stray directory was removed")
	}
	if _, err := os.Stat(owned.Workspace.Dir); err != nil {
		t.Fatal("the owned worktree was removed")
	}

	// Named, they go.
	res, err = env.eng.Workspaces.Prune(env.ctx, api.PruneInput{Force: []string{dirty.Dir, stray}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Removed) != 2 || branchExists(t, repo, dirty.Branch) {
		t.Fatalf("forced: removed %v, branches %v", res.Removed, res.Branches)
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Fatal("forced stray directory still there")
	}
	if _, err := os.Stat(owned.Workspace.Dir); err != nil {
		t.Fatal("the owned worktree was removed")
	}
}

// A worktrees directory that is a link to another disk is a home's own:
// its tasks' worktrees are recorded where they are, and prune keeps them.
func TestPruneWithWorktreesOnAnotherDisk(t *testing.T) {
	env := newEngineEnv(t)
	repo := newGitRepo(t, env)
	disk := filepath.Join(t.TempDir(), "big")
	if err := os.Mkdir(disk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(disk, filepath.Join(env.dir, "worktrees")); err != nil {
		t.Fatal(err)
	}
	tk := env.create(api.CreateTaskInput{Title: "far", CWD: repo})
	if tk.Workspace.Dir != filepath.Join(disk, "app", tk.ID) {
		t.Fatalf("worktree recorded at %s; want it resolved under %s", tk.Workspace.Dir, disk)
	}
	res, err := env.eng.Workspaces.Prune(env.ctx, api.PruneInput{})
	if err != nil || len(res.Entries) != 0 {
		t.Fatalf("prune: %+v, %v", res, err)
	}
	if _, err := os.Stat(tk.Workspace.Dir); err != nil {
		t.Fatal(err)
	}
}

// A directory under worktrees/ whose .git file names a repository no task
// was made from is judged without git: a prune that ran `git status` there
// would take that repository's config, whose clean filter runs a command
// (ADR 0049: nothing the agent wrote runs on the host).
func TestPruneRunsNoGitInAWorktreeOfAnUnknownRepository(t *testing.T) {
	env := newEngineEnv(t)
	repo := newGitRepo(t, env)
	env.create(api.CreateTaskInput{Title: "owned", CWD: repo})

	planted := filepath.Join(t.TempDir(), "app") // same base name: worktrees/app/...
	if err := os.MkdirAll(planted, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, planted, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(planted, "a.txt"), []byte("text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(planted, ".gitattributes"), []byte("a.txt filter=evil\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, planted, "add", ".")
	gitT(t, planted, "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-q", "-m", "x")
	dir := filepath.Join(env.dir, "worktrees", "app", "plantedid")
	gitT(t, planted, "worktree", "add", "-q", "-b", "feature", dir)
	mark := filepath.Join(t.TempDir(), "ran")
	gitT(t, planted, "config", "filter.evil.clean", "touch "+mark+"; cat")
	restamp := func() {
		t.Helper()
		// Same size, new time: status must read the file, through the filter.
		when := time.Now().Add(time.Duration(rand.IntN(1000)+10) * time.Second)
		if err := os.Chtimes(filepath.Join(dir, "a.txt"), when, when); err != nil {
			t.Fatal(err)
		}
	}
	// The trap is real: git status in that directory runs the filter.
	restamp()
	gitT(t, dir, "status", "--porcelain")
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("the planted filter did not run under a plain git status: %v", err)
	}
	if err := os.Remove(mark); err != nil {
		t.Fatal(err)
	}
	restamp()

	dry, err := env.eng.Workspaces.Prune(env.ctx, api.PruneInput{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range dry.Entries {
		if e.Name == dir {
			found = true
			if e.Action != "keep" || !strings.Contains(e.Why, "runs no git there") {
				t.Fatalf("planted worktree: %+v", e)
			}
		}
	}
	if !found {
		t.Fatalf("the planted worktree is not listed: %+v", dry.Entries)
	}
	if _, err := env.eng.Workspaces.Prune(env.ctx, api.PruneInput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("prune ran git with the planted repository's config (its filter ran)")
	}
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); err != nil {
		t.Fatalf("the planted worktree was removed: %v", err)
	}
}
