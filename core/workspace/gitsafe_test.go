package workspace

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// An agent that plants an fsmonitor, hooks, or a .git file of its own in
// its worktree gets nothing run when kandev diffs, commits pending work and
// merges; kandev still reads the real repository.
func TestGitSafeRunsNothingTheAgentWrote(t *testing.T) {
	repo := newRepo(t)
	m := &Manager{}
	ctx := context.Background()
	wt := create(t, m, repo, "t1", "")
	pwned := filepath.Join(t.TempDir(), "pwned")
	trap := "#!/bin/sh\necho ran >> " + pwned + "\n"

	// What an unconfined agent (or the operator's own config) could set:
	// an fsmonitor and hooks in the repository kandev runs git in.
	run(t, repo, "config", "core.fsmonitor", filepath.Join(repo, "fsmon.sh"))
	write(t, repo, "fsmon.sh", trap)
	for _, h := range []string{"pre-commit", "post-commit", "commit-msg", "post-merge", "post-checkout", "prepare-commit-msg", "reference-transaction"} {
		write(t, repo, ".git/hooks/"+h, trap)
		if err := os.Chmod(filepath.Join(repo, ".git/hooks", h), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(repo, "fsmon.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, repo, "add", "fsmon.sh")
	run(t, repo, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "commit", "-q", "-m", "tools")
	os.Remove(pwned)

	// A .git file of the agent's own, leading to a repository whose config
	// runs a program on any git command.
	fake := filepath.Join(wt.Dir, "fakegit")
	run(t, wt.Dir, "init", "-q", "--bare", fake)
	write(t, fake, "config", "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "+filepath.Join(repo, "fsmon.sh")+"\n\thooksPath = "+filepath.Join(repo, ".git/hooks")+"\n")
	write(t, wt.Dir, ".git", "gitdir: "+fake+"\n")
	write(t, wt.Dir, "f.txt", "agent's work\n")

	d, err := m.Diff(ctx, wt, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) == 0 {
		t.Fatalf("diff through the real git directory shows nothing: %+v", d)
	}
	write(t, wt.Dir, ".git", "gitdir: "+filepath.Join(repo, ".git/worktrees/t1")+"\n") // merge needs a sane worktree for its own checks
	if _, err := m.Merge(ctx, wt, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(pwned); err == nil {
		t.Fatalf("something the agent wrote ran on the host: %q", b)
	}
	if read(t, repo, "f.txt") != "agent's work\n" {
		t.Fatal("merge did not bring the work in")
	}
}

// A worktree the main repository does not list is not trusted: git is
// not left to follow its .git file.
func TestWorktreeEnvFailsClosed(t *testing.T) {
	repo := newRepo(t)
	m := &Manager{}
	stray := t.TempDir()
	write(t, stray, ".git", "gitdir: "+filepath.Join(repo, ".git")+"\n")
	if _, err := m.gitWT(context.Background(), Worktree{Repo: repo, Dir: stray}, "status"); err == nil {
		t.Fatal("git ran in a worktree the repository does not list")
	}
}
