package workspace

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// newRepo makes a repository with one commit holding f.txt ("one\n") and a
// .gitignore ignoring .env and config/*.json.
func newRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := filepath.Join(t.TempDir(), "myrepo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "init", "-q", "-b", "main")
	run(t, dir, "config", "user.name", "Test")
	run(t, dir, "config", "user.email", "test@example.com")
	run(t, dir, "config", "commit.gpgsign", "false")
	write(t, dir, "f.txt", "one\n")
	write(t, dir, ".gitignore", ".env\nconfig/*.json\nnode_modules/\n")
	run(t, dir, "add", ".")
	run(t, dir, "commit", "-q", "-m", "initial")
	return dir
}

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, dir, rel, text string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func create(t *testing.T, m *Manager, repo, id, base string) Worktree {
	t.Helper()
	home := t.TempDir()
	wt, err := m.Create(context.Background(), CreateOptions{
		Repo: repo, Dir: Dir(home, repo, id), Branch: DefaultBranch(id, "Fix the thing"), Base: base,
	})
	if err != nil {
		t.Fatalf("create %s: %v", id, err)
	}
	return wt
}

func TestRepoRoot(t *testing.T) {
	repo := newRepo(t)
	m := &Manager{}
	ctx := context.Background()
	sub := filepath.Join(repo, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := m.RepoRoot(ctx, sub)
	if err != nil || got != repo {
		t.Fatalf("RepoRoot(sub) = %q, %v; want %q", got, err, repo)
	}
	// From inside a task's worktree the repository is still the main checkout.
	wt := create(t, m, repo, "t1", "")
	got, err = m.RepoRoot(ctx, wt.Dir)
	if err != nil || got != repo {
		t.Fatalf("RepoRoot(worktree) = %q, %v; want %q", got, err, repo)
	}
	if _, err := m.RepoRoot(ctx, t.TempDir()); !errors.Is(err, ErrNotRepo) {
		t.Fatalf("RepoRoot(outside) err = %v; want ErrNotRepo", err)
	}
	if _, err := m.RepoRoot(ctx, filepath.Join(repo, ".git")); !errors.Is(err, ErrNotRepo) {
		t.Fatalf("RepoRoot(.git) err = %v; want ErrNotRepo", err)
	}
}

func TestSlugAndDefaultBranch(t *testing.T) {
	cases := map[string]string{
		"Fix the login bug!":      "fix-the-login-bug",
		"  --Add   API v2 --  ":   "add-api-v2",
		"Résumé parsing":          "r-sum-parsing",
		"日本語":                     "",
		strings.Repeat("ab ", 30): "ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-a", // 40 characters
	}
	for in, want := range cases {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q; want %q", in, got, want)
		}
	}
	if got := DefaultBranch("t12", "Fix it"); got != "kandev/t12-fix-it" {
		t.Errorf("DefaultBranch = %q", got)
	}
	if got := DefaultBranch("t12", "日本語"); got != "kandev/t12" {
		t.Errorf("DefaultBranch(no slug) = %q", got)
	}
	if got := Dir("/h", "/src/myrepo", "t3"); got != "/h/worktrees/myrepo/t3" {
		t.Errorf("Dir = %q", got)
	}
}

func TestCreateBranchesFromHeadAndRecordsBase(t *testing.T) {
	repo := newRepo(t)
	m := &Manager{}
	first := run(t, repo, "rev-parse", "HEAD")
	write(t, repo, "f.txt", "two\n")
	run(t, repo, "commit", "-q", "-am", "second")
	head := run(t, repo, "rev-parse", "HEAD")

	wt := create(t, m, repo, "t1", "")
	if wt.BaseCommit != head || wt.Branch != "kandev/t1-fix-the-thing" || wt.Repo != repo {
		t.Fatalf("worktree = %+v; want base %s", wt, head)
	}
	if got := read(t, wt.Dir, "f.txt"); got != "two\n" {
		t.Fatalf("worktree f.txt = %q", got)
	}
	if got := run(t, wt.Dir, "rev-parse", "--abbrev-ref", "HEAD"); got != wt.Branch {
		t.Fatalf("worktree is on %q; want %q", got, wt.Branch)
	}

	old := create(t, m, repo, "t2", first)
	if old.BaseCommit != first || read(t, old.Dir, "f.txt") != "one\n" {
		t.Fatalf("--base %s: worktree %+v has f.txt %q", first, old, read(t, old.Dir, "f.txt"))
	}
}

func TestCreateRefusesAndLeavesNothing(t *testing.T) {
	repo := newRepo(t)
	m := &Manager{}
	ctx := context.Background()
	home := t.TempDir()
	wt := create(t, m, repo, "t1", "")

	// The branch exists already.
	dir := Dir(home, repo, "t2")
	if _, err := m.Create(ctx, CreateOptions{Repo: repo, Dir: dir, Branch: wt.Branch}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("create on an existing branch: err = %v", err)
	}
	// The base does not exist.
	if _, err := m.Create(ctx, CreateOptions{Repo: repo, Dir: dir, Branch: "kandev/t2", Base: "no-such-ref"}); err == nil || !strings.Contains(err.Error(), "no-such-ref") {
		t.Fatalf("create from a missing base: err = %v", err)
	}
	// An invalid branch name.
	if _, err := m.Create(ctx, CreateOptions{Repo: repo, Dir: dir, Branch: "bad..name"}); err == nil {
		t.Fatal("create with branch bad..name succeeded")
	}
	// Names git reads as files of its git directory, not as a branch.
	for _, name := range []string{"FETCH_HEAD", "ORIG_HEAD", "MERGE_HEAD", "AUTO_MERGE", "logs/HEAD", "worktrees/x", "hooks/pre-commit"} {
		if _, err := m.Create(ctx, CreateOptions{Repo: repo, Dir: dir, Branch: name}); err == nil || !strings.Contains(err.Error(), "git") {
			t.Fatalf("create with branch %s: err = %v", name, err)
		}
	}
	// Dashes: never options to git.
	out := filepath.Join(t.TempDir(), "written")
	for _, o := range []CreateOptions{
		{Repo: repo, Dir: dir, Branch: "kandev/t2", Base: "--output=" + out},
		{Repo: repo, Dir: dir, Branch: "-D", Base: ""},
	} {
		if _, err := m.Create(ctx, o); err == nil || !strings.Contains(err.Error(), "dash") {
			t.Fatalf("create %+v: err = %v", o, err)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("a dashed base reached git: %v", err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Fatalf("refused creates left %s: %v", dir, err)
	}
	if got := run(t, repo, "branch", "--list", "kandev/t2*"); got != "" {
		t.Fatalf("refused creates left branches %q", got)
	}
}

func TestCreateCopiesWorktreeInclude(t *testing.T) {
	repo := newRepo(t)
	write(t, repo, ".worktreeinclude", "# local files\n.env\nconfig/*.json\n/tracked.txt\n*.local\n")
	write(t, repo, "tracked.txt", "committed\n")
	run(t, repo, "add", "tracked.txt", ".worktreeinclude")
	run(t, repo, "commit", "-q", "-m", "tracked")
	write(t, repo, "tracked.txt", "local edit\n") // tracked: the checkout's copy wins
	write(t, repo, ".env", "SECRET=1\n")
	write(t, repo, "config/local.json", "{}\n")
	write(t, repo, "config/deep/other.json", "{}\n") // config/*.json does not reach it
	write(t, repo, "node_modules/x/index.js", "x\n") // ignored, not listed
	write(t, repo, "notes.local", "mine\n")          // listed, not ignored: a merge would commit it

	wt := create(t, &Manager{}, repo, "t1", "")
	if got := read(t, wt.Dir, ".env"); got != "SECRET=1\n" {
		t.Fatalf(".env = %q", got)
	}
	if got := read(t, wt.Dir, "config/local.json"); got != "{}\n" {
		t.Fatalf("config/local.json = %q", got)
	}
	if got := read(t, wt.Dir, "tracked.txt"); got != "committed\n" {
		t.Fatalf("tracked.txt = %q; a tracked file must come from the commit", got)
	}
	for _, rel := range []string{"config/deep/other.json", "node_modules/x/index.js", "notes.local"} {
		if _, err := os.Stat(filepath.Join(wt.Dir, rel)); !os.IsNotExist(err) {
			t.Errorf("%s was copied (err %v)", rel, err)
		}
	}
}

func TestWorktreesAreIsolated(t *testing.T) {
	repo := newRepo(t)
	m := &Manager{}
	a := create(t, m, repo, "ta", "")
	b := create(t, m, repo, "tb", "")
	write(t, a.Dir, "f.txt", "from a\n")
	write(t, b.Dir, "f.txt", "from b\n")
	if read(t, a.Dir, "f.txt") != "from a\n" || read(t, b.Dir, "f.txt") != "from b\n" || read(t, repo, "f.txt") != "one\n" {
		t.Fatal("worktrees saw each other's change")
	}
}

func TestConcurrentCreatesOnOneRepository(t *testing.T) {
	repo := newRepo(t)
	m := &Manager{}
	home := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := "t" + string(rune('a'+i))
			_, errs[i] = m.Create(context.Background(), CreateOptions{Repo: repo, Dir: Dir(home, repo, id), Branch: "kandev/" + id})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("create %d: %v", i, err)
		}
	}
}

func TestDiffShowsCommittedStagedUnstagedAndUntracked(t *testing.T) {
	repo := newRepo(t)
	m := &Manager{}
	wt := create(t, m, repo, "t1", "")
	write(t, wt.Dir, "committed.txt", "c\n")
	run(t, wt.Dir, "add", "committed.txt")
	run(t, wt.Dir, "commit", "-q", "-m", "agent commit")
	write(t, wt.Dir, "staged.txt", "s\n")
	run(t, wt.Dir, "add", "staged.txt")
	write(t, wt.Dir, "f.txt", "one\nmore\n") // unstaged
	write(t, wt.Dir, "new.txt", "n1\nn2\n")  // untracked
	write(t, wt.Dir, ".env", "ignored\n")    // ignored: not work
	indexBefore := run(t, wt.Dir, "diff", "--cached", "--name-only")

	d, err := m.Diff(context.Background(), wt, true)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]int{"committed.txt": {1, 0}, "staged.txt": {1, 0}, "f.txt": {1, 0}, "new.txt": {2, 0}}
	if len(d.Files) != len(want) {
		t.Fatalf("files = %+v; want %v", d.Files, want)
	}
	for _, f := range d.Files {
		if w, ok := want[f.Path]; !ok || w != [2]int{f.Added, f.Deleted} {
			t.Errorf("file %+v; want %v", f, want[f.Path])
		}
	}
	if a, del := d.Totals(); a != 5 || del != 0 {
		t.Errorf("totals +%d -%d; want +5 -0", a, del)
	}
	if !strings.Contains(d.Stat, "4 files changed") || !strings.Contains(d.Patch, "+more") || !strings.Contains(d.Patch, "+n2") {
		t.Errorf("stat %q / patch %q", d.Stat, d.Patch)
	}
	if strings.Contains(d.Patch, ".env") {
		t.Errorf("diff shows an ignored file:\n%s", d.Patch)
	}
	if got := run(t, wt.Dir, "diff", "--cached", "--name-only"); got != indexBefore {
		t.Errorf("Diff changed the worktree's index: %q, was %q", got, indexBefore)
	}
	// Without the patch, only the summary.
	d, err = m.Diff(context.Background(), wt, false)
	if err != nil || d.Patch != "" || len(d.Files) != 4 {
		t.Fatalf("stat-only diff = %+v, %v", d, err)
	}
}

func TestMergeBringsWorkIntoMainCheckout(t *testing.T) {
	repo := newRepo(t)
	m := &Manager{}
	ctx := context.Background()
	wt := create(t, m, repo, "t1", "")
	write(t, wt.Dir, "f.txt", "changed\n") // never committed by the agent
	write(t, wt.Dir, "added.txt", "new\n")

	res, err := m.Merge(ctx, wt, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Into != "main" || res.Commit != run(t, repo, "rev-parse", "HEAD") {
		t.Fatalf("result %+v", res)
	}
	if read(t, repo, "f.txt") != "changed\n" || read(t, repo, "added.txt") != "new\n" {
		t.Fatal("merge did not bring the work into the main checkout")
	}
	if st := run(t, repo, "status", "--porcelain"); st != "" {
		t.Fatalf("main checkout not clean after merge: %q", st)
	}
	if _, err := m.Merge(ctx, wt, MergeOptions{}); !errors.Is(err, ErrNothingToMerge) {
		t.Fatalf("second merge err = %v; want ErrNothingToMerge", err)
	}
}

func TestMergeSquashMakesOneCommit(t *testing.T) {
	repo := newRepo(t)
	m := &Manager{}
	wt := create(t, m, repo, "t1", "")
	for i, text := range []string{"a\n", "b\n", "c\n"} {
		write(t, wt.Dir, "f.txt", text)
		run(t, wt.Dir, "commit", "-q", "-am", "step "+string(rune('1'+i)))
	}
	before := run(t, repo, "rev-parse", "HEAD")
	if _, err := m.Merge(context.Background(), wt, MergeOptions{Squash: true, Message: "Fix the thing"}); err != nil {
		t.Fatal(err)
	}
	if got := run(t, repo, "rev-list", "--count", before+"..HEAD"); got != "1" {
		t.Fatalf("squash made %s commits", got)
	}
	if got := run(t, repo, "log", "-1", "--format=%s%n%P"); got != "Fix the thing\n"+before {
		t.Fatalf("squash commit = %q", got)
	}
	if read(t, repo, "f.txt") != "c\n" {
		t.Fatal("squash did not bring the work")
	}
}

// assertUnchanged checks the main checkout is exactly as before a refused merge.
func assertUnchanged(t *testing.T, repo, head, fileText string) {
	t.Helper()
	if got := run(t, repo, "rev-parse", "HEAD"); got != head {
		t.Errorf("HEAD moved to %s", got)
	}
	if got := read(t, repo, "f.txt"); got != fileText {
		t.Errorf("f.txt = %q; want %q", got, fileText)
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", "MERGE_HEAD")); !os.IsNotExist(err) {
		t.Error("a merge was left in progress")
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", "SQUASH_MSG")); !os.IsNotExist(err) {
		t.Error("a squash was left in progress")
	}
}

func TestMergeRefusesDirtyMainCheckout(t *testing.T) {
	repo := newRepo(t)
	m := &Manager{}
	wt := create(t, m, repo, "t1", "")
	write(t, wt.Dir, "other.txt", "x\n")
	write(t, repo, "f.txt", "user edit\n")
	head := run(t, repo, "rev-parse", "HEAD")
	for _, squash := range []bool{false, true} {
		_, err := m.Merge(context.Background(), wt, MergeOptions{Squash: squash})
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "uncommitted changes") {
			t.Fatalf("squash=%v: err = %v; want a refusal for uncommitted changes", squash, err)
		}
		assertUnchanged(t, repo, head, "user edit\n")
	}
	if _, err := os.Stat(filepath.Join(repo, "other.txt")); !os.IsNotExist(err) {
		t.Fatal("refused merge brought other.txt")
	}
}

func TestMergeRefusesConflictAndChangesNothing(t *testing.T) {
	repo := newRepo(t)
	m := &Manager{}
	ctx := context.Background()
	a := create(t, m, repo, "ta", "")
	b := create(t, m, repo, "tb", "")
	write(t, a.Dir, "f.txt", "from a\n")
	write(t, b.Dir, "f.txt", "from b\n")
	if _, err := m.Merge(ctx, a, MergeOptions{}); err != nil {
		t.Fatalf("first merge: %v", err)
	}
	head := run(t, repo, "rev-parse", "HEAD")
	for _, squash := range []bool{false, true} {
		_, err := m.Merge(ctx, b, MergeOptions{Squash: squash})
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "f.txt") {
			t.Fatalf("squash=%v: err = %v; want a conflict refusal naming f.txt", squash, err)
		}
		assertUnchanged(t, repo, head, "from a\n")
		if st := run(t, repo, "status", "--porcelain"); st != "" {
			t.Fatalf("main checkout dirty after refusal: %q", st)
		}
	}
}

func TestMergeRefusesDetachedHead(t *testing.T) {
	repo := newRepo(t)
	m := &Manager{}
	wt := create(t, m, repo, "t1", "")
	write(t, wt.Dir, "x.txt", "x\n")
	run(t, repo, "checkout", "-q", "--detach")
	if _, err := m.Merge(context.Background(), wt, MergeOptions{}); !errors.Is(err, ErrRefused) {
		t.Fatalf("err = %v; want ErrRefused", err)
	}
}

func TestDiscardRemovesWorktreeAndBranch(t *testing.T) {
	repo := newRepo(t)
	m := &Manager{}
	ctx := context.Background()
	wt := create(t, m, repo, "t1", "")
	write(t, wt.Dir, "work.txt", "unsaved\n")
	run(t, wt.Dir, "add", "work.txt")
	if err := m.Discard(ctx, wt); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(wt.Dir); !os.IsNotExist(err) {
		t.Fatalf("worktree dir still there: %v", err)
	}
	if got := run(t, repo, "branch", "--list", wt.Branch); got != "" {
		t.Fatalf("branch left: %q", got)
	}
	if got := run(t, repo, "worktree", "list", "--porcelain"); strings.Count(got, "worktree ") != 1 {
		t.Fatalf("worktrees left:\n%s", got)
	}
	// Again, with everything gone: still fine.
	if err := m.Discard(ctx, wt); err != nil {
		t.Fatalf("second discard: %v", err)
	}
}

func TestDiscardAfterDirectoryVanished(t *testing.T) {
	repo := newRepo(t)
	m := &Manager{}
	wt := create(t, m, repo, "t1", "")
	if err := os.RemoveAll(wt.Dir); err != nil {
		t.Fatal(err)
	}
	if err := m.Discard(context.Background(), wt); err != nil {
		t.Fatal(err)
	}
	if got := run(t, repo, "branch", "--list", wt.Branch); got != "" {
		t.Fatalf("branch left: %q", got)
	}
}

func writeScript(t *testing.T, dir, body string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(dir, ".kandev", "setup")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // WriteFile keeps an existing file's mode
		t.Fatal(err)
	}
}

func TestRunSetup(t *testing.T) {
	repo := newRepo(t)
	m := &Manager{}
	ctx := context.Background()
	wt := create(t, m, repo, "t1", "")

	if out, err := m.RunSetup(ctx, wt, nil); err != nil || out != "" {
		t.Fatalf("no script: %q, %v", out, err)
	}

	// A failure carries its output, and is run again next time.
	writeScript(t, wt.Dir, "echo installing deps\nexit 3\n", 0o755)
	var se *SetupError
	for range 2 {
		_, err := m.RunSetup(ctx, wt, nil)
		if !errors.As(err, &se) || !strings.Contains(se.Output, "installing deps") || !strings.Contains(err.Error(), "exit status 3") {
			t.Fatalf("failing setup: err = %v", err)
		}
	}

	// Not executable: said so, not silently skipped.
	writeScript(t, wt.Dir, "exit 0\n", 0o644)
	if _, err := m.RunSetup(ctx, wt, nil); !errors.As(err, &se) || !strings.Contains(err.Error(), "not executable") {
		t.Fatalf("non-executable setup: err = %v", err)
	}

	// The script runs in the worktree and sees where it is.
	writeScript(t, wt.Dir, "pwd\necho \"branch=$KANDEV_BRANCH\"\necho to-stderr >&2\ntouch made-by-setup\n", 0o755)
	out, err := m.RunSetup(ctx, wt, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, wt.Dir) || !strings.Contains(out, "branch="+wt.Branch) || !strings.Contains(out, "to-stderr") {
		t.Fatalf("setup output %q", out)
	}
	if _, err := os.Stat(filepath.Join(wt.Dir, "made-by-setup")); err != nil {
		t.Fatal(err)
	}
	// Once it succeeded, it is not run again for this worktree.
	writeScript(t, wt.Dir, "echo again\nexit 1\n", 0o755)
	if out, err := m.RunSetup(ctx, wt, nil); err != nil || out != "" {
		t.Fatalf("setup ran again: %q, %v", out, err)
	}
}

func TestRunSetupFromMainCheckoutAndBounded(t *testing.T) {
	repo := newRepo(t)
	m := &Manager{SetupTimeout: 300 * time.Millisecond}
	wt := create(t, m, repo, "t1", "")
	// Untracked in the main checkout: still found. The background sleep is
	// in the script's group and is killed with it.
	writeScript(t, repo, "echo started\nsleep 60 &\nsleep 60\n", 0o755)
	out, err := m.RunSetup(context.Background(), wt, nil)
	var se *SetupError
	if !errors.As(err, &se) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(out, "started") {
		t.Fatalf("hung setup: out %q, err %v", out, err)
	}
}

func TestTailKeepsTheEnd(t *testing.T) {
	tl := &tail{max: 8}
	tl.Write([]byte("0123456789"))
	tl.Write([]byte("ab"))
	if got := tl.String(); got != "[…]456789ab" {
		t.Fatalf("tail = %q", got)
	}
}

func TestParseVersion(t *testing.T) {
	for in, want := range map[string][3]int{
		"git version 2.39.5\n":               {2, 39, 1},
		"git version 2.39.3 (Apple Git-146)": {2, 39, 1},
		"git version 2.16.0.windows.1":       {2, 16, 1},
		"git version 3.0":                    {3, 0, 1},
		"hub version 2.14":                   {0, 0, 0},
		"git version two":                    {0, 0, 0},
	} {
		major, minor, ok := parseVersion(in)
		okInt := 0
		if ok {
			okInt = 1
		}
		if got := [3]int{major, minor, okInt}; got != want {
			t.Errorf("parseVersion(%q) = %v; want %v", in, got, want)
		}
	}
}

func TestLocatePrefix(t *testing.T) {
	repo := newRepo(t)
	sub := filepath.Join(repo, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	m := &Manager{}
	got, prefix, err := m.Locate(context.Background(), sub)
	if err != nil || got != repo || prefix != "a/b" {
		t.Fatalf("Locate = %q, %q, %v", got, prefix, err)
	}
	got, prefix, err = m.Locate(context.Background(), repo)
	if err != nil || got != repo || prefix != "" {
		t.Fatalf("Locate(top) = %q, %q, %v", got, prefix, err)
	}
}
