package sandbox

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
)

// GitDirs are the parts of the main repository's git directory a worktree
// needs to commit: the common directory to read (config, hooks, refs,
// packed-refs stay read-only), its objects to add to, the worktree's own
// administrative directory (HEAD, index, logs), and the directory of its
// branch's ref and reflog.
type GitDirs struct {
	Common string // <repo>/.git
	Admin  string // <repo>/.git/worktrees/<name>
	Branch string // the task's branch, e.g. kandev/k3f9qa-split-auth
	// Protect names files in Admin mounted read-only over the writable
	// directory: where git finds the common directory and the worktree
	// (commondir, gitdir), and kandev's own markers.
	Protect []string
	// Private, when set, is the worktree's own git state (ADR 0065): the
	// agent writes its objects, its administrative directory and its
	// branch's ref there, and the repository's objects and the real
	// administrative directory are read-only to it or hidden.
	Private *PrivateGit
}

// PrivateGit are the host directories of a confined worktree's own git
// state (workspace.Private).
type PrivateGit struct {
	Objects string // mounted over <Common>/objects
	Shared  string // where <Common>/objects is mounted read-only (its alternate)
	Admin   string // mounted over the administrative directory
	Refs    string // mounted over the branch's ref directory
	Logs    string // mounted over that directory's reflogs
}

// FindGitDirs finds a worktree's git directories from kandev's records:
// commonDir is the main checkout's git directory (asked of the main
// checkout, not of the worktree) and the administrative directory is the
// one whose gitdir file names this worktree. The worktree's own .git file,
// which its agent can write, is never read.
func FindGitDirs(commonDir, worktree, branch string) (*GitDirs, error) {
	return FindGitDirsFS(OS{}, commonDir, worktree, branch)
}

// FindGitDirsFS is FindGitDirs on the machine fs is (a host's repository).
func FindGitDirsFS(fs FS, commonDir, worktree, branch string) (*GitDirs, error) {
	ents, err := fs.ReadDir(filepath.Join(commonDir, "worktrees"))
	if err != nil {
		return nil, fmt.Errorf("sandbox: worktrees of %s: %w", commonDir, err)
	}
	want := filepath.Join(worktree, ".git")
	for _, e := range ents {
		admin := filepath.Join(commonDir, "worktrees", e)
		b, err := fs.ReadFile(filepath.Join(admin, "gitdir"))
		if err != nil {
			continue
		}
		if filepath.Clean(string(bytes.TrimSpace(b))) == want {
			return &GitDirs{Common: commonDir, Admin: admin, Branch: branch, Protect: []string{"commondir", "gitdir"}}, nil
		}
	}
	return nil, fmt.Errorf("sandbox: no administrative directory under %s/worktrees names %s", commonDir, worktree)
}

// refDir is the directory holding the branch's loose ref, relative to the
// common directory; "" when the branch sits right in refs/heads beside
// main, which a confined agent must not be able to move: its commits then
// stay uncommitted to the branch (git refuses the ref update).
func (g *GitDirs) refDir() string {
	d := filepath.Dir(strings.TrimPrefix(g.Branch, "refs/heads/"))
	if g.Branch == "" || d == "." {
		return ""
	}
	return filepath.Join("refs", "heads", d)
}

// mounts are the .git parts in mount order. The branch's ref directory
// and its reflog directory are created on the host first, so that their
// mounts have something to bind.
func (g *GitDirs) mounts(fs FS, worktree string) []Mount {
	if g.Private != nil {
		return g.privateMounts(fs, worktree)
	}
	ms := []Mount{
		{Path: g.Common, Why: "main repository's .git (config, hooks, refs read-only)"},
		{Path: filepath.Join(g.Common, "objects"), RW: true, Why: "objects a commit adds"},
		{Path: g.Admin, RW: true, Why: "the worktree's HEAD, index and logs"},
		// The .git file itself is kandev's: an agent that replaced it
		// could point git (its own, and a careless host's) elsewhere.
		{Path: filepath.Join(worktree, ".git"), Why: "the worktree's .git file, read-only"},
	}
	for _, name := range g.Protect {
		if p := filepath.Join(g.Admin, name); fs.Exists(p) {
			ms = append(ms, Mount{Path: p, Why: "kandev's record of the worktree, read-only"})
		}
	}
	if d := g.refDir(); d != "" {
		own := filepath.Base(g.Branch)
		for _, sub := range []string{d, filepath.Join("logs", d)} {
			p := filepath.Join(g.Common, sub)
			if fs.MkdirAll(p, 0o755) != nil {
				continue
			}
			ms = append(ms, Mount{Path: p, RW: true, Why: "the branch's ref directory"})
			// Other tasks' branches beside it stay as they are: each is
			// mounted read-only over itself, so it can be neither
			// rewritten nor renamed over nor removed.
			ents, _ := fs.ReadDir(p)
			for _, n := range ents {
				if n != own && n != own+".lock" {
					ms = append(ms, Mount{Path: filepath.Join(p, n), Why: "another branch's ref, read-only"})
				}
			}
		}
	}
	return ms
}

// privateMounts are the .git parts of a worktree with private git state:
// nothing the agent writes lands where the host's git reads it as the
// repository's.
func (g *GitDirs) privateMounts(fs FS, worktree string) []Mount {
	p := g.Private
	objects := filepath.Join(g.Common, "objects")
	ms := []Mount{
		{Path: g.Common, Why: "main repository's .git (config, hooks, refs read-only)"},
		{Path: objects, Src: p.Objects, RW: true, Why: "the task's own objects (the repository takes them only checked)"},
		{Path: p.Shared, Src: objects, Why: "the repository's objects, read-only"},
		{Path: g.Admin, Src: p.Admin, RW: true, Why: "the worktree's own HEAD, index and logs"},
		{Path: filepath.Join(worktree, ".git"), Why: "the worktree's .git file, read-only"},
	}
	for _, name := range []string{"commondir", "gitdir"} {
		if q := filepath.Join(g.Admin, name); fs.Exists(q) {
			ms = append(ms, Mount{Path: q, Why: "kandev's record of the worktree, read-only"})
		}
	}
	if d := g.refDir(); d != "" {
		for _, m := range []struct{ sub, src string }{{d, p.Refs}, {filepath.Join("logs", d), p.Logs}} {
			q := filepath.Join(g.Common, m.sub)
			if fs.MkdirAll(q, 0o755) != nil {
				continue
			}
			ms = append(ms, Mount{Path: q, Src: m.src, RW: true, Why: "the branch's own ref directory"})
		}
	}
	return ms
}
