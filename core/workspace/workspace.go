package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
)

// Worktree is what a task's workspace records: enough to diff, merge or
// discard it later, after restarts.
type Worktree struct {
	Repo       string `json:"repo"`        // the main checkout's top-level directory
	Dir        string `json:"dir"`         // the worktree the agent works in
	Branch     string `json:"branch"`      // the task's branch
	BaseCommit string `json:"base_commit"` // the commit the branch started from
}

// Manager runs workspace operations. Operations on one repository are
// serialised: git takes locks of its own (index.lock, worktree admin
// files) and two concurrent worktree adds on one repository can fail.
type Manager struct {
	// Timeout bounds one git command (DefaultTimeout when zero).
	Timeout time.Duration
	// SetupTimeout bounds .kandev/setup (DefaultSetupTimeout when zero).
	SetupTimeout time.Duration

	// Quarantine is the directory under which confined worktrees keep
	// their private git state (objects, administrative directory, branch
	// ref; quarantine.go); "" when no task is ever confined here.
	Quarantine string

	runner  Runner
	mu      sync.Mutex
	locks   map[string]*sync.Mutex
	version string // "" until checked and found recent enough
}

// MinVersion is the oldest git kandev's worktrees work with (git worktree
// remove arrived in 2.17).
var MinVersion = [2]int{2, 17}

// checkVersion refuses a git too old for what kandev asks of it, with a
// clear error instead of a puzzling one from a missing option.
func (m *Manager) checkVersion(ctx context.Context) error {
	m.mu.Lock()
	ok := m.version != ""
	m.mu.Unlock()
	if ok {
		return nil
	}
	out, err := m.git(ctx, "", "version")
	if err != nil {
		return fmt.Errorf("check git version: %w", err)
	}
	major, minor, ok := parseVersion(out)
	if !ok {
		return fmt.Errorf("check git version: cannot read %q", strings.TrimSpace(out))
	}
	if major < MinVersion[0] || (major == MinVersion[0] && minor < MinVersion[1]) {
		return fmt.Errorf("%s is too old for kandev's worktrees: it needs git %d.%d or newer", strings.TrimSpace(out), MinVersion[0], MinVersion[1])
	}
	m.mu.Lock()
	m.version = strings.TrimSpace(out)
	m.mu.Unlock()
	return nil
}

// parseVersion reads "git version 2.39.5" (and vendor suffixes such as
// "2.39.3 (Apple Git-146)").
func parseVersion(out string) (major, minor int, ok bool) {
	f := strings.Fields(out)
	if len(f) < 3 || f[0] != "git" || f[1] != "version" {
		return 0, 0, false
	}
	parts := strings.SplitN(f[2], ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	var err1, err2 error
	major, err1 = strconv.Atoi(parts[0])
	minor, err2 = strconv.Atoi(parts[1])
	return major, minor, err1 == nil && err2 == nil
}

func (m *Manager) lock(repo string) func() {
	m.mu.Lock()
	if m.locks == nil {
		m.locks = map[string]*sync.Mutex{}
	}
	l, ok := m.locks[repo]
	if !ok {
		l = &sync.Mutex{}
		m.locks[repo] = l
	}
	m.mu.Unlock()
	l.Lock()
	return l.Unlock
}

func (m *Manager) git(ctx context.Context, dir string, args ...string) (string, error) {
	return m.gitEnv(ctx, dir, nil, args...)
}

// RepoRoot returns the top-level directory of the main checkout that dir
// belongs to. For a directory inside a linked worktree it is still the main
// checkout, so a task created from inside another task's worktree branches
// from the same repository. It wraps ErrNotRepo when dir is in no work tree.
func (m *Manager) RepoRoot(ctx context.Context, dir string) (string, error) {
	repo, _, err := m.Locate(ctx, dir)
	return repo, err
}

// Locate is RepoRoot plus dir's path relative to the top of its own
// checkout ("" at the top), to start a worktree's agent at the same place.
func (m *Manager) Locate(ctx context.Context, dir string) (repo, prefix string, err error) {
	// No --path-format=absolute (git 2.31): a relative common dir is
	// relative to dir.
	out, err := m.git(ctx, dir, "rev-parse", "--git-common-dir", "--is-inside-work-tree", "--show-prefix")
	if err != nil {
		var ge *GitError
		if errors.As(err, &ge) && exitCode(ge.Err) == 128 && (strings.Contains(ge.Stderr, "not a git repository") || strings.Contains(ge.Stderr, "cannot use bare repository")) {
			return "", "", fmt.Errorf("%s: %w", dir, ErrNotRepo)
		}
		if errors.Is(err, ErrNoGit) {
			return "", "", err
		}
		return "", "", fmt.Errorf("find repository of %s: %w", dir, err)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 2 || lines[1] != "true" {
		return "", "", fmt.Errorf("%s: %w", dir, ErrNotRepo)
	}
	common := lines[0]
	if !filepath.IsAbs(common) {
		common = filepath.Join(dir, common)
	}
	if abs, err := filepath.EvalSymlinks(common); err == nil {
		common = abs
	}
	if filepath.Base(common) != ".git" {
		// A bare repository or a separate git dir: there is no main
		// checkout to merge into.
		return "", "", fmt.Errorf("%s: repository %s has no main checkout: %w", dir, common, ErrNotRepo)
	}
	if len(lines) > 2 {
		prefix = strings.TrimSuffix(lines[2], "/")
	}
	return filepath.Dir(common), prefix, nil
}

// Head returns the commit the checkout in dir is on.
func (m *Manager) Head(ctx context.Context, dir string) (string, error) {
	return m.resolve(ctx, dir, "HEAD")
}

func (m *Manager) resolve(ctx context.Context, dir, ref string) (string, error) {
	out, err := m.git(ctx, dir, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("resolve %q in %s: no such commit: %w", ref, dir, err)
	}
	return strings.TrimSpace(out), nil
}

// Slug turns a title into a branch-name fragment: lower-case ASCII letters
// and digits separated by single dashes, at most 40 characters.
func Slug(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			if b.Len() >= 40 {
				break
			}
			continue
		}
		dash = true
	}
	return strings.TrimRight(b.String(), "-")
}

// DefaultBranch is the branch a task gets when none is given:
// kandev/<task-id>-<slug-of-title>.
func DefaultBranch(taskID, title string) string {
	if s := Slug(title); s != "" {
		return "kandev/" + taskID + "-" + s
	}
	return "kandev/" + taskID
}

// Dir is where a task's worktree lives: <home>/worktrees/<repo-name>/<task-id>.
func Dir(home, repo, taskID string) string {
	return filepath.Join(home, "worktrees", filepath.Base(repo), taskID)
}

// CreateOptions says where and from what a worktree is made.
type CreateOptions struct {
	Repo   string // main checkout (from RepoRoot)
	Dir    string // the new worktree's directory; must not exist
	Branch string // a new branch; must not exist
	Base   string // a ref or commit; the repository's HEAD when empty
}

// Create adds a worktree on a new branch from the base, then copies the
// files .worktreeinclude lists. It does not run .kandev/setup: that is the
// launch's business (RunSetup), so its output lands in the task's log.
// On failure it leaves no worktree and no branch behind.
func (m *Manager) Create(ctx context.Context, o CreateOptions) (Worktree, error) {
	if o.Repo == "" || o.Dir == "" || o.Branch == "" {
		return Worktree{}, errors.New("create worktree: repository, directory and branch are required")
	}
	if err := m.checkVersion(ctx); err != nil {
		return Worktree{}, err
	}
	// A leading dash would reach git as an option (a base or branch may
	// come from an agent's create_task_kandev).
	if strings.HasPrefix(o.Base, "-") || strings.HasPrefix(o.Branch, "-") {
		return Worktree{}, fmt.Errorf("create worktree: base %q or branch %q starts with a dash", o.Base, o.Branch)
	}
	defer m.lock(o.Repo)()
	base := o.Base
	if base == "" {
		base = "HEAD"
	}
	commit, err := m.resolve(ctx, o.Repo, base)
	if err != nil {
		return Worktree{}, fmt.Errorf("create worktree: %w", err)
	}
	if _, err := m.git(ctx, o.Repo, "check-ref-format", "--branch", o.Branch); err != nil {
		return Worktree{}, fmt.Errorf("create worktree: invalid branch name %q: %w", o.Branch, err)
	}
	if _, err := m.git(ctx, o.Repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+o.Branch); err == nil {
		return Worktree{}, fmt.Errorf("create worktree: branch %q already exists", o.Branch)
	}
	// kandev names the branch to git later (merge, diff, branch -d): a
	// name git already reads as something else (@ is HEAD, heads/main is
	// main, a tag, a commit's abbreviation) would merge or delete that.
	for _, p := range []string{"refs/", "heads/", "tags/", "remotes/"} {
		if strings.HasPrefix(o.Branch, p) {
			return Worktree{}, fmt.Errorf("create worktree: branch name %q starts with %s, which git reads as another ref", o.Branch, p)
		}
	}
	// Nor a name git reads as a file of the git directory: FETCH_HEAD,
	// ORIG_HEAD and every other all-capitals pseudo-ref, and names under
	// the directory's own entries (logs/…, worktrees/…), which resolve to
	// those files before any branch.
	if isPseudoRef(o.Branch) {
		return Worktree{}, fmt.Errorf("create worktree: branch name %q is how git names a file of its own (a pseudo-ref such as FETCH_HEAD); pick another", o.Branch)
	}
	if first, _, _ := strings.Cut(o.Branch, "/"); first != o.Branch {
		if _, err := os.Lstat(filepath.Join(o.Repo, ".git", first)); err == nil {
			return Worktree{}, fmt.Errorf("create worktree: branch name %q starts with %s/, which git reads as a file of its git directory; pick another", o.Branch, first)
		}
	}
	if out, err := m.git(ctx, o.Repo, "rev-parse", "--verify", "--quiet", "--symbolic-full-name", o.Branch); err == nil || strings.TrimSpace(out) != "" {
		return Worktree{}, fmt.Errorf("create worktree: branch name %q already means %s to git; pick another", o.Branch, orWhat(strings.TrimSpace(out)))
	}
	if _, err := os.Lstat(o.Dir); err == nil {
		return Worktree{}, fmt.Errorf("create worktree: %s already exists", o.Dir)
	}
	if err := os.MkdirAll(filepath.Dir(o.Dir), 0o755); err != nil {
		return Worktree{}, fmt.Errorf("create worktree: %w", err)
	}
	if _, err := m.git(ctx, o.Repo, "worktree", "add", "-b", o.Branch, o.Dir, commit); err != nil {
		// A timeout can leave a half-made worktree: undo it.
		m.removeLocked(context.WithoutCancel(ctx), o.Repo, o.Dir, o.Branch)
		return Worktree{}, fmt.Errorf("create worktree for branch %q: %w", o.Branch, err)
	}
	wt := Worktree{Repo: o.Repo, Dir: o.Dir, Branch: o.Branch, BaseCommit: commit}
	if _, err := m.copyIncludes(ctx, o.Repo, o.Dir); err != nil {
		m.removeLocked(context.WithoutCancel(ctx), o.Repo, o.Dir, o.Branch)
		return Worktree{}, fmt.Errorf("create worktree: %w", err)
	}
	return wt, nil
}

// isPseudoRef is git's pseudo-ref syntax: capitals and underscores only
// (HEAD, FETCH_HEAD, MERGE_HEAD, AUTO_MERGE, …).
func isPseudoRef(name string) bool {
	for _, r := range name {
		if !(r >= 'A' && r <= 'Z' || r == '_') {
			return false
		}
	}
	return name != ""
}

func orWhat(ref string) string {
	if ref == "" {
		return "a commit"
	}
	return ref
}

// Discard removes the worktree and deletes its branch, whatever they hold.
// Parts already gone are not an error, so a discard that was interrupted
// can be run again.
func (m *Manager) Discard(ctx context.Context, wt Worktree) error {
	defer m.lock(wt.Repo)()
	return m.removeLocked(ctx, wt.Repo, wt.Dir, wt.Branch)
}

// Retired says what Retire did with a worktree's branch.
type Retired struct {
	// Committed: uncommitted work was first committed on the branch.
	Committed bool
	// BranchDeleted: the branch was merged into the main checkout's
	// branch, so it went with the worktree; otherwise it stays.
	BranchDeleted bool
}

// Retire removes a finished task's worktree but keeps its work: anything
// uncommitted is first committed on the task's branch, and the branch is
// deleted only when git itself calls it merged into the branch the main
// checkout is on (git branch -d). A worktree whose work cannot be
// committed is left as it is, with the error.
func (m *Manager) Retire(ctx context.Context, wt Worktree) (Retired, error) {
	defer m.lock(wt.Repo)()
	var r Retired
	if err := m.importLocked(ctx, wt); err != nil {
		return r, fmt.Errorf("retire worktree %s: keep it: %w", wt.Dir, err)
	}
	if _, err := os.Lstat(wt.Dir); err == nil {
		committed, err := m.commitPending(ctx, wt)
		if err != nil {
			return r, fmt.Errorf("retire worktree %s: keep it, its uncommitted work could not be committed: %w", wt.Dir, err)
		}
		r.Committed = committed
		if _, err := m.git(ctx, wt.Repo, "worktree", "remove", "--force", wt.Dir); err != nil {
			return r, fmt.Errorf("retire worktree %s: %w", wt.Dir, err)
		}
	}
	if _, err := m.git(ctx, wt.Repo, "worktree", "prune"); err != nil {
		return r, fmt.Errorf("retire worktree %s: %w", wt.Dir, err)
	}
	if err := m.RemovePrivate(wt); err != nil {
		return r, fmt.Errorf("retire worktree %s: its sandbox's git state: %w", wt.Dir, err)
	}
	if wt.Branch != "" {
		// -d, not -D: git refuses a branch not merged into HEAD.
		if _, err := m.git(ctx, wt.Repo, "branch", "-d", wt.Branch); err == nil {
			r.BranchDeleted = true
		}
	}
	return r, nil
}

func (m *Manager) removeLocked(ctx context.Context, repo, dir, branch string) error {
	var errs []error
	if _, err := os.Lstat(dir); err == nil {
		if _, err := m.git(ctx, repo, "worktree", "remove", "--force", "--force", dir); err != nil {
			// Not a registered worktree (a half-made one): remove the files.
			if rmErr := os.RemoveAll(dir); rmErr != nil {
				errs = append(errs, fmt.Errorf("remove worktree %s: %w", dir, err))
			}
		}
	}
	if err := m.RemovePrivate(Worktree{Repo: repo, Dir: dir}); err != nil {
		errs = append(errs, fmt.Errorf("remove the sandbox's git state of %s: %w", dir, err))
	}
	// Forget registrations whose directory is gone, so the branch is free.
	if _, err := m.git(ctx, repo, "worktree", "prune"); err != nil {
		errs = append(errs, fmt.Errorf("prune worktrees: %w", err))
	}
	if branch != "" {
		if _, err := m.git(ctx, repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch); err == nil {
			if _, err := m.git(ctx, repo, "branch", "-D", branch); err != nil {
				errs = append(errs, fmt.Errorf("delete branch %s: %w", branch, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Open reads the worktree at dir back from git: its main checkout and the
// branch it is on ("" when detached). BaseCommit stays empty.
func (m *Manager) Open(ctx context.Context, dir string) (Worktree, error) {
	repo, _, err := m.Locate(ctx, dir)
	if err != nil {
		return Worktree{}, err
	}
	wt := Worktree{Repo: repo, Dir: dir}
	if out, err := m.git(ctx, dir, "symbolic-ref", "--quiet", "--short", "HEAD"); err == nil {
		wt.Branch = strings.TrimSpace(out)
	}
	return wt, nil
}

// DeleteBranchAt deletes a branch only while it still points at head: a
// branch kandev squash-merged, which git does not call merged, and which
// has had nothing added since. It reports whether the branch went.
func (m *Manager) DeleteBranchAt(ctx context.Context, repo, branch, head string) bool {
	defer m.lock(repo)()
	if branch == "" || head == "" {
		return false
	}
	// update-ref checks the old value and deletes in one step; moved
	// since, or gone, it fails and the branch (if any) is kept.
	_, err := m.git(ctx, repo, "update-ref", "-d", "refs/heads/"+branch, head)
	return err == nil
}
