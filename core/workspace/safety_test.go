package workspace

// Issue 20: nothing an agent's branch does may touch a file the user's
// main checkout ignores or does not track (ADR 0041), and .worktreeinclude
// writes only inside the new worktree.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// agentCommit commits everything in the worktree as an agent would.
func agentCommit(t *testing.T, dir, msg string) {
	t.Helper()
	run(t, dir, "add", "--all", ".")
	run(t, dir, "-c", "user.name=Agent", "-c", "user.email=agent@example.com", "commit", "-q", "-m", msg)
}

func branchFiles(t *testing.T, repo, branch string) string {
	t.Helper()
	return "\n" + run(t, repo, "ls-tree", "-r", "--name-only", branch) + "\n"
}

// ignoredLocal is a repository whose checkout ignores local.cfg and holds
// the user's own.
func ignoredLocal(t *testing.T) string {
	t.Helper()
	repo := newRepo(t)
	write(t, repo, ".gitignore", ".env\nconfig/*.json\nnode_modules/\nlocal.cfg\n")
	run(t, repo, "add", ".gitignore")
	run(t, repo, "commit", "-q", "-m", "ignore local.cfg")
	write(t, repo, "local.cfg", "the user's settings\n")
	return repo
}

func TestMergeRefusesToOverwriteAFileTheMainCheckoutIgnores(t *testing.T) {
	for _, squash := range []bool{false, true} {
		repo := ignoredLocal(t)
		m := &Manager{}
		wt := create(t, m, repo, "t1", "")
		// The agent un-ignores local.cfg on its branch and commits its own.
		write(t, wt.Dir, ".gitignore", "node_modules/\n")
		write(t, wt.Dir, "local.cfg", "the agent's settings\n")
		write(t, wt.Dir, "sub/new.txt", "fine\n")
		agentCommit(t, wt.Dir, "take over local.cfg")
		head := run(t, repo, "rev-parse", "HEAD")

		_, err := m.Merge(context.Background(), wt, MergeOptions{Squash: squash})
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "local.cfg") || strings.Contains(err.Error(), "sub/new.txt") {
			t.Fatalf("squash %v: merge err = %v; want refused naming local.cfg alone", squash, err)
		}
		if got := read(t, repo, "local.cfg"); got != "the user's settings\n" {
			t.Fatalf("squash %v: the user's local.cfg is now %q", squash, got)
		}
		if run(t, repo, "rev-parse", "HEAD") != head || run(t, repo, "status", "--porcelain") != "" {
			t.Fatalf("squash %v: a refused merge changed the main checkout", squash)
		}
	}
}

func TestMergeAndArchiveCommitNothingTheMainCheckoutIgnores(t *testing.T) {
	repo := ignoredLocal(t)
	write(t, repo, ".worktreeinclude", ".env\n")
	write(t, repo, ".env", "SECRET=1\n")
	m := &Manager{}
	ctx := context.Background()
	merged, archived := create(t, m, repo, "t1", ""), create(t, m, repo, "t2", "")
	for _, wt := range []Worktree{merged, archived} {
		if read(t, wt.Dir, ".env") != "SECRET=1\n" {
			t.Fatal(".env was not copied")
		}
		// Uncommitted: a .gitignore that ignores nothing of the user's,
		// the agent's own local.cfg, and real work.
		write(t, wt.Dir, ".gitignore", "node_modules/\n")
		write(t, wt.Dir, "local.cfg", "the agent's settings\n")
		write(t, wt.Dir, "work.txt", "done\n")
		run(t, wt.Dir, "add", "-f", "local.cfg") // even staged
	}

	r, err := m.Retire(ctx, archived)
	if err != nil || !r.Committed {
		t.Fatalf("retire: %+v, %v", r, err)
	}
	files := branchFiles(t, repo, archived.Branch)
	if strings.Contains(files, "\nlocal.cfg\n") || strings.Contains(files, "\n.env\n") || !strings.Contains(files, "\nwork.txt\n") {
		t.Fatalf("archived branch holds:%s", files)
	}

	d, err := m.Diff(ctx, merged, false)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range d.Files {
		paths = append(paths, f.Path)
	}
	if strings.Join(paths, ",") != ".gitignore,work.txt" {
		t.Fatalf("diff lists %v; want what a merge commits: .gitignore and work.txt", paths)
	}

	if _, err := m.Merge(ctx, merged, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	files = branchFiles(t, repo, merged.Branch)
	if strings.Contains(files, "\nlocal.cfg\n") || strings.Contains(files, "\n.env\n") || !strings.Contains(files, "\nwork.txt\n") {
		t.Fatalf("merged branch holds:%s", files)
	}
	if read(t, repo, "local.cfg") != "the user's settings\n" || read(t, repo, ".env") != "SECRET=1\n" || read(t, repo, "work.txt") != "done\n" {
		t.Fatal("the merge touched the user's ignored files, or lost the work")
	}
	// Left in the worktree, not lost to the merge.
	if read(t, merged.Dir, "local.cfg") != "the agent's settings\n" {
		t.Fatal("the agent's local.cfg left the worktree")
	}

}

func TestWorktreeIncludeWritesOnlyInsideTheWorktree(t *testing.T) {
	repo := newRepo(t)
	outside := t.TempDir()
	write(t, repo, ".gitignore", ".env\nconf/app.env\ndb.link\nbin/tool\n")
	write(t, repo, "conf/README", "settings live here\n")
	write(t, repo, ".worktreeinclude", "conf/app.env\n.env\ndb.link\nbin/tool\n")
	run(t, repo, "add", ".gitignore", "conf/README", ".worktreeinclude")
	run(t, repo, "commit", "-q", "-m", "conf")
	// The user's secrets, and a relative link that means something else
	// one directory down.
	write(t, repo, "conf/app.env", "API_KEY=secret\n")
	write(t, repo, ".env", "SECRET=1\n")
	write(t, repo, "bin/tool", "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(repo, "conf", "app.env"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(repo, ".env"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(repo, "bin", "tool"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../kandev.db", filepath.Join(repo, "db.link")); err != nil {
		t.Fatal(err)
	}

	// An agent's branch where conf/ is a tracked link out of the repository.
	side := filepath.Join(t.TempDir(), "side")
	run(t, repo, "worktree", "add", "-q", "-b", "evil", side)
	if err := os.RemoveAll(filepath.Join(side, "conf")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(side, "conf")); err != nil {
		t.Fatal(err)
	}
	agentCommit(t, side, "conf is elsewhere")
	run(t, repo, "worktree", "remove", "--force", side)

	wt := create(t, &Manager{}, repo, "t1", "evil")
	ents, err := os.ReadDir(outside)
	if err != nil || len(ents) != 0 {
		t.Fatalf("the copy wrote outside the worktree: %v %v", ents, err)
	}
	if _, err := os.Lstat(filepath.Join(wt.Dir, "db.link")); !os.IsNotExist(err) {
		t.Fatalf("a link was copied (err %v)", err)
	}
	for rel, mode := range map[string]os.FileMode{".env": 0o600, "bin/tool": 0o750} {
		fi, err := os.Lstat(filepath.Join(wt.Dir, rel))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != mode {
			t.Fatalf("%s copied as %v (%v); want a regular file, mode %v", rel, fi.Mode(), err, mode)
		}
	}
	if read(t, wt.Dir, ".env") != "SECRET=1\n" {
		t.Fatal(".env copied wrong")
	}

	// A source reached through a link in the main checkout is not read.
	repo2 := newRepo(t)
	write(t, outside, "stolen.env", "NOT=yours\n")
	write(t, repo2, ".gitignore", "secrets\nsecrets/*\n")
	write(t, repo2, ".worktreeinclude", "secrets/*\n")
	if err := os.Symlink(outside, filepath.Join(repo2, "secrets")); err != nil {
		t.Fatal(err)
	}
	wt2 := create(t, &Manager{}, repo2, "t2", "")
	if _, err := os.Lstat(filepath.Join(wt2.Dir, "secrets")); !os.IsNotExist(err) {
		t.Fatalf("something was copied through the main checkout's link (err %v)", err)
	}
}

// Issue 20: a branch name git already reads as something else is refused:
// merging or deleting "@" or "heads/main" later would act on main.
func TestCreateRefusesBranchNamesGitResolvesElsewhere(t *testing.T) {
	repo := newRepo(t)
	run(t, repo, "tag", "v1")
	head := run(t, repo, "rev-parse", "HEAD")
	m := &Manager{}
	home := t.TempDir()
	for _, b := range []string{"@", "heads/main", "refs/heads/x", "tags/v2", "v1", head[:10]} {
		_, err := m.Create(context.Background(), CreateOptions{Repo: repo, Dir: Dir(home, repo, "t1"), Branch: b})
		if err == nil {
			t.Fatalf("branch %q accepted", b)
		}
		if _, err := os.Lstat(Dir(home, repo, "t1")); !os.IsNotExist(err) {
			t.Fatalf("branch %q: a worktree was left", b)
		}
	}
	if got := run(t, repo, "for-each-ref", "--format=%(refname)", "refs/heads/"); got != "refs/heads/main" {
		t.Fatalf("branches now: %q", got)
	}
	if _, err := m.Create(context.Background(), CreateOptions{Repo: repo, Dir: Dir(home, repo, "t1"), Branch: "feature/heads"}); err != nil {
		t.Fatalf("a plain name: %v", err)
	}
}
