package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrRefused is wrapped by a merge that was refused before changing
// anything: a dirty main checkout, a detached HEAD, a conflict.
var ErrRefused = errors.New("merge refused")

// ErrNothingToMerge is returned when the task's branch holds nothing the
// main checkout's branch does not already have.
var ErrNothingToMerge = errors.New("nothing to merge")

// FileStat is one file's line counts in a diff (-1 for binary files).
type FileStat struct {
	Path    string `json:"path"`
	Added   int    `json:"added"`
	Deleted int    `json:"deleted"`
}

// Diff is what a task changed against its base commit.
type Diff struct {
	Base  string     `json:"base"`
	Files []FileStat `json:"files"`
	Stat  string     `json:"stat"`            // git diff --stat
	Patch string     `json:"patch,omitempty"` // the full diff, when asked
}

// Totals sums the lines added and deleted (binary files count nothing).
func (d Diff) Totals() (added, deleted int) {
	for _, f := range d.Files {
		if f.Added > 0 {
			added += f.Added
		}
		if f.Deleted > 0 {
			deleted += f.Deleted
		}
	}
	return added, deleted
}

// Diff compares the worktree as it is now (commits on the task's branch,
// staged and unstaged changes, and the new files a merge would commit:
// those neither the worktree's nor the main checkout's ignore rules ignore)
// with the base commit. It stages into a throwaway index, so the worktree's own index,
// which the agent may be using, is never touched.
func (m *Manager) Diff(ctx context.Context, wt Worktree, patch bool) (Diff, error) {
	if err := m.Import(ctx, wt); err != nil {
		return Diff{}, err
	}
	tmp, err := os.MkdirTemp("", "kandev-diff-")
	if err != nil {
		return Diff{}, fmt.Errorf("diff: %w", err)
	}
	defer os.RemoveAll(tmp)
	env := append(worktreeEnv(wt), "GIT_INDEX_FILE="+filepath.Join(tmp, "index"))
	run := func(args ...string) (string, error) {
		return m.gitEnv(ctx, wt.Dir, env, args...)
	}
	if _, err := run("read-tree", "HEAD"); err != nil {
		return Diff{}, fmt.Errorf("diff %s: %w", wt.Dir, err)
	}
	// What a merge would commit, by the same rule (ADR 0041).
	if err := m.stageWork(ctx, wt, env); err != nil {
		return Diff{}, fmt.Errorf("diff %s: %w", wt.Dir, err)
	}
	d := Diff{Base: wt.BaseCommit}
	num, err := run("diff", "--cached", "--no-color", "--numstat", "-z", wt.BaseCommit)
	if err != nil {
		return Diff{}, fmt.Errorf("diff %s: %w", wt.Dir, err)
	}
	d.Files = parseNumstat(num)
	if d.Stat, err = run("diff", "--cached", "--no-color", "--stat", wt.BaseCommit); err != nil {
		return Diff{}, fmt.Errorf("diff %s: %w", wt.Dir, err)
	}
	if patch {
		if d.Patch, err = run("diff", "--cached", "--no-color", wt.BaseCommit); err != nil {
			return Diff{}, fmt.Errorf("diff %s: %w", wt.Dir, err)
		}
	}
	return d, nil
}

// DiffBranch compares the task's branch with its base commit in the main
// checkout's repository, for a worktree that is gone (retired by an
// archive): its work is all committed on the branch. It wraps ErrNoBranch
// when the branch no longer exists.
func (m *Manager) DiffBranch(ctx context.Context, wt Worktree, patch bool) (Diff, error) {
	if strings.HasPrefix(wt.Branch, "-") || wt.Branch == "" {
		return Diff{}, fmt.Errorf("diff: bad branch %q", wt.Branch)
	}
	if err := m.Import(ctx, wt); err != nil {
		return Diff{}, err
	}
	if _, err := m.git(ctx, wt.Repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+wt.Branch); err != nil {
		return Diff{}, fmt.Errorf("diff: %w: %s", ErrNoBranch, wt.Branch)
	}
	run := func(args ...string) (string, error) {
		return m.git(ctx, wt.Repo, append(append([]string{"diff", "--no-color"}, args...), wt.BaseCommit, "refs/heads/"+wt.Branch, "--")...)
	}
	d := Diff{Base: wt.BaseCommit}
	num, err := run("--numstat", "-z")
	if err != nil {
		return Diff{}, fmt.Errorf("diff %s: %w", wt.Branch, err)
	}
	d.Files = parseNumstat(num)
	if d.Stat, err = run("--stat"); err != nil {
		return Diff{}, fmt.Errorf("diff %s: %w", wt.Branch, err)
	}
	if patch {
		if d.Patch, err = run(); err != nil {
			return Diff{}, fmt.Errorf("diff %s: %w", wt.Branch, err)
		}
	}
	return d, nil
}

// ErrNoBranch is returned by DiffBranch when the task's branch is gone.
var ErrNoBranch = errors.New("no such branch")

// parseNumstat reads `git diff --numstat -z`: "added\tdeleted\tpath\0", or
// for a rename "added\tdeleted\t\0old\0new\0".
func parseNumstat(out string) []FileStat {
	files := []FileStat{}
	parts := strings.Split(out, "\x00")
	for i := 0; i < len(parts); i++ {
		fields := strings.SplitN(parts[i], "\t", 3)
		if len(fields) != 3 {
			continue
		}
		f := FileStat{Path: fields[2], Added: atoiOr(fields[0], -1), Deleted: atoiOr(fields[1], -1)}
		if f.Path == "" && i+2 < len(parts) {
			f.Path = parts[i+2] // renamed: keep the new name
			i += 2
		}
		files = append(files, f)
	}
	return files
}

func atoiOr(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return n
}

// MergeOptions says how a task's branch is merged.
type MergeOptions struct {
	Squash  bool
	Message string // the merge or squash commit's message; git's default when empty
}

// MergeResult says what a merge did.
type MergeResult struct {
	Into   string `json:"into"`   // the main checkout's branch
	Commit string `json:"commit"` // its new head
}

// Merge brings the task's work into the branch the main checkout is on.
// Uncommitted work in the worktree is committed on the task's branch first,
// so what merges is what Diff showed. It refuses (ErrRefused) when the main
// checkout is on no branch, has uncommitted changes to tracked files, or
// the merge would conflict; a refused or failed merge leaves the main
// checkout as it was.
// CheckedOutBranch is the branch checked out in the main checkout repo,
// which a merge goes into; "" when its HEAD is detached.
func (m *Manager) CheckedOutBranch(ctx context.Context, repo string) (string, error) {
	out, err := m.git(ctx, repo, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err == nil {
		return strings.TrimSpace(out), nil
	}
	// symbolic-ref exits 1 on a detached HEAD; anything else is a fault.
	if _, rerr := m.git(ctx, repo, "rev-parse", "--verify", "--quiet", "HEAD"); rerr == nil {
		return "", nil
	}
	return "", fmt.Errorf("read the branch checked out in %s: %w", repo, err)
}

func (m *Manager) Merge(ctx context.Context, wt Worktree, o MergeOptions) (MergeResult, error) {
	defer m.lock(wt.Repo)()
	if err := m.importLocked(ctx, wt); err != nil {
		return MergeResult{}, err
	}
	into, err := m.CheckedOutBranch(ctx, wt.Repo)
	if err != nil {
		return MergeResult{}, err
	}
	if into == "" {
		return MergeResult{}, fmt.Errorf("%w: the main checkout %s is not on a branch; check out the branch to merge into", ErrRefused, wt.Repo)
	}
	if into == wt.Branch {
		return MergeResult{}, fmt.Errorf("%w: the main checkout %s is on the task's own branch %s", ErrRefused, wt.Repo, wt.Branch)
	}
	dirty, err := m.git(ctx, wt.Repo, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return MergeResult{}, fmt.Errorf("merge: %w", err)
	}
	if dirty = strings.TrimSpace(dirty); dirty != "" {
		return MergeResult{}, fmt.Errorf("%w: the main checkout %s has uncommitted changes; commit or stash them first:\n%s", ErrRefused, wt.Repo, dirty)
	}
	if _, err := m.commitPending(ctx, wt); err != nil {
		return MergeResult{}, err
	}
	ahead, err := m.git(ctx, wt.Repo, "rev-list", "--count", "HEAD..refs/heads/"+wt.Branch)
	if err != nil {
		return MergeResult{}, fmt.Errorf("merge: %w", err)
	}
	if strings.TrimSpace(ahead) == "0" {
		return MergeResult{}, fmt.Errorf("%w: %s has nothing that %s lacks", ErrNothingToMerge, wt.Branch, into)
	}
	// Ask git whether the merge conflicts without touching any checkout.
	// Exit 1 is a conflict; any other failure (a git before 2.38 has no
	// --write-tree) falls through to the merge, which is aborted on conflict.
	result := ""
	out, err := m.git(ctx, wt.Repo, "merge-tree", "--write-tree", "--name-only", "--no-messages", "HEAD", "refs/heads/"+wt.Branch)
	if err != nil {
		var ge *GitError
		if errors.As(err, &ge) && exitCode(ge.Err) == 1 {
			files := strings.Join(strings.Split(strings.TrimSpace(out), "\n")[1:], "\n")
			return MergeResult{}, fmt.Errorf("%w: merging %s into %s conflicts in:\n%s\nresolve it in the task's worktree %s (merge %s there) and merge again", ErrRefused, wt.Branch, into, files, wt.Dir, into)
		}
	} else {
		result, _, _ = strings.Cut(strings.TrimSpace(out), "\n")
	}
	// git replaces an ignored file in the way of a merge without a word:
	// the user's file is refused its loss here instead (ADR 0041).
	if err := m.checkOverwrites(ctx, wt, into, result); err != nil {
		return MergeResult{}, err
	}
	if o.Squash {
		if _, err := m.git(ctx, wt.Repo, "merge", "--squash", "refs/heads/"+wt.Branch); err != nil {
			m.git(context.WithoutCancel(ctx), wt.Repo, "reset", "--merge")
			return MergeResult{}, fmt.Errorf("%w: squash %s into %s: %w", ErrRefused, wt.Branch, into, err)
		}
		args := []string{"commit", "--no-verify", "--no-edit"}
		if o.Message != "" {
			args = []string{"commit", "--no-verify", "-m", o.Message}
		}
		if _, err := m.git(ctx, wt.Repo, args...); err != nil {
			m.git(context.WithoutCancel(ctx), wt.Repo, "reset", "--merge")
			return MergeResult{}, fmt.Errorf("commit squash of %s into %s: %w", wt.Branch, into, err)
		}
	} else {
		args := []string{"merge", "--no-edit"}
		if o.Message != "" {
			args = append(args, "-m", o.Message)
		}
		if _, err := m.git(ctx, wt.Repo, append(args, "refs/heads/"+wt.Branch)...); err != nil {
			m.git(context.WithoutCancel(ctx), wt.Repo, "merge", "--abort")
			return MergeResult{}, fmt.Errorf("%w: merge %s into %s: %w", ErrRefused, wt.Branch, into, err)
		}
	}
	head, err := m.Head(ctx, wt.Repo)
	if err != nil {
		return MergeResult{}, fmt.Errorf("merge: %w", err)
	}
	return MergeResult{Into: into, Commit: head}, nil
}

// commitPending commits the worktree's uncommitted work on the task's
// branch, as stageWork chooses it (ADR 0041), and reports whether there
// was anything to commit.
func (m *Manager) commitPending(ctx context.Context, wt Worktree) (bool, error) {
	return m.commitPendingAs(ctx, wt, "kandev: uncommitted work on "+wt.Branch)
}

// commitPendingAs is commitPending with the commit's message.
func (m *Manager) commitPendingAs(ctx context.Context, wt Worktree, message string) (bool, error) {
	st, err := m.gitWT(ctx, wt, "status", "--porcelain")
	if err != nil {
		return false, fmt.Errorf("merge: status of %s: %w", wt.Dir, err)
	}
	if strings.TrimSpace(st) == "" {
		return false, nil
	}
	if err := m.stageWork(ctx, wt, nil); err != nil {
		return false, fmt.Errorf("merge: stage work in %s: %w", wt.Dir, err)
	}
	// Nothing staged (only files the rule leaves out): nothing to commit.
	if _, err := m.gitWT(ctx, wt, "diff", "--cached", "--quiet", "HEAD"); err == nil {
		return false, nil
	}
	if _, err := m.gitWT(ctx, wt, "commit", "--no-verify", "-m", message); err != nil {
		return false, fmt.Errorf("merge: commit work in %s: %w", wt.Dir, err)
	}
	// A confined agent's next turn starts from this commit too.
	if err := m.syncPrivate(ctx, wt); err != nil {
		return true, fmt.Errorf("merge: tell the task's sandbox of the commit: %w", err)
	}
	return true, nil
}

// stageWork stages, into the index env names (the worktree's own when
// env is nil), what kandev commits of a worktree's uncommitted work: every
// change to a file its HEAD tracks, and the new files (untracked, or
// staged but not in HEAD) that neither the worktree's ignore rules nor the
// main checkout's ignore them, except the files .worktreeinclude copied in.
// The agent's branch may rewrite .gitignore; the main checkout's rules are
// the user's. New files left out stay in the worktree, unstaged.
func (m *Manager) stageWork(ctx context.Context, wt Worktree, env []string) error {
	// The worktree's real git directories, never its .git file (ADR 0049).
	env = append(worktreeEnv(wt), env...)
	run := func(args ...string) (string, error) { return m.gitEnv(ctx, wt.Dir, env, args...) }
	if _, err := run("add", "--update", "--", "."); err != nil {
		return err
	}
	staged, err := run("diff", "--cached", "--name-only", "--no-renames", "--diff-filter=A", "-z", "HEAD")
	if err != nil {
		return err
	}
	others, err := run("ls-files", "--others", "--exclude-standard", "-z")
	if err != nil {
		return err
	}
	isStaged := map[string]bool{}
	var candidates []string
	for _, p := range splitNUL(staged) {
		isStaged[p] = true
		candidates = append(candidates, p)
	}
	for _, p := range splitNUL(others) {
		if !isStaged[p] {
			candidates = append(candidates, p)
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	skip := map[string]bool{}
	for _, p := range m.included(ctx, wt.Dir) {
		skip[p] = true
	}
	ignored, err := m.gitIn(ctx, wt.Repo, nil, strings.Join(candidates, "\x00")+"\x00", "check-ignore", "-z", "--stdin")
	if err != nil && exitCode(errors.Unwrap(err)) != 1 { // 1: none of them is ignored
		return fmt.Errorf("check new files against the main checkout's ignore rules: %w", err)
	}
	for _, p := range splitNUL(ignored) {
		skip[p] = true
	}
	var add, unstage []string
	for _, p := range candidates {
		switch {
		case skip[p] && isStaged[p]:
			unstage = append(unstage, p)
		case !skip[p] && !isStaged[p]:
			add = append(add, p)
		}
	}
	literal := append(append([]string(nil), env...), "GIT_LITERAL_PATHSPECS=1")
	for _, step := range []struct {
		paths []string
		args  []string
	}{{unstage, []string{"rm", "--cached", "--quiet", "--ignore-unmatch", "--"}}, {add, []string{"add", "--"}}} {
		for len(step.paths) > 0 {
			n := min(len(step.paths), 500)
			if _, err := m.gitEnv(ctx, wt.Dir, literal, append(step.args, step.paths[:n]...)...); err != nil {
				return err
			}
			step.paths = step.paths[n:]
		}
	}
	return nil
}

// checkOverwrites refuses a merge that would write a path the main
// checkout has but does not track: an ignored or untracked file, or a file
// or link where the merge needs a directory. git overwrites ignored files
// silently. result is the merge's tree from merge-tree, or "" to compare
// the branch with the merge base instead.
func (m *Manager) checkOverwrites(ctx context.Context, wt Worktree, into, result string) error {
	var out string
	var err error
	if result != "" {
		out, err = m.git(ctx, wt.Repo, "diff-tree", "-r", "-z", "--no-renames", "--name-only", "--diff-filter=A", "HEAD", result)
	} else {
		out, err = m.git(ctx, wt.Repo, "diff", "--no-renames", "--name-only", "-z", "--diff-filter=A", "HEAD...refs/heads/"+wt.Branch, "--")
	}
	if err != nil {
		return fmt.Errorf("merge: list the files it adds: %w", err)
	}
	var inTheWay []string
	for _, rel := range splitNUL(out) {
		if p := inTheWayOf(wt.Repo, rel); p != "" {
			inTheWay = append(inTheWay, p)
		}
	}
	if len(inTheWay) > 0 {
		return fmt.Errorf("%w: merging %s into %s would overwrite files the main checkout %s has but does not track (ignored or untracked):\n%s\nmove them aside, or remove them from the task's branch, and merge again",
			ErrRefused, wt.Branch, into, wt.Repo, strings.Join(inTheWay, "\n"))
	}
	return nil
}

// inTheWayOf returns the path of the main checkout (relative) that a
// merge adding rel would overwrite or write through, or "".
func inTheWayOf(repo, rel string) string {
	parts := strings.Split(rel, "/")
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		fi, err := os.Lstat(filepath.Join(repo, filepath.FromSlash(sub)))
		if err != nil {
			return "" // absent: nothing of the user's there
		}
		if i == len(parts)-1 || !fi.IsDir() {
			return sub
		}
	}
	return ""
}
