package workspace

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The runner (ADR 0065): with every program-naming key git reads set to a
// trap — the repository's config, a per-worktree config, the daemon's
// environment — and attributes in the agent's tree selecting drivers,
// kandev's diff, commit of pending work and merge run none of them, and
// still show the true content.
func TestRunnerRunsNothingConfigured(t *testing.T) {
	repo := newRepo(t)
	m := &Manager{}
	ctx := context.Background()
	wt := create(t, m, repo, "t1", "")
	marks := t.TempDir()
	trap := func(name string) string { return "touch " + filepath.Join(marks, name) + "; cat" }
	for k, v := range map[string]string{
		"filter.x.clean": trap("clean"), "filter.x.smudge": trap("smudge"), "filter.x.process": trap("process"),
		"filter.x.required": "true",
		"diff.x.textconv":   trap("textconv"), "diff.x.command": trap("diffcmd"),
		"merge.x.driver": trap("mergedriver"), "diff.external": trap("external"),
		"core.pager": trap("pager"), "gpg.program": trap("gpg"), "commit.gpgSign": "true",
		"core.sshCommand": trap("ssh"), "credential.helper": "!" + trap("cred"),
		"core.fsmonitor": trap("fsmonitor"), "core.hooksPath": marks,
		"extensions.worktreeConfig": "true",
	} {
		run(t, repo, "config", k, v)
	}
	// What an agent with a writable administrative directory would plant.
	admin := adminDir(wt)
	write(t, admin, "config.worktree", "[core]\n\tfsmonitor = "+trap("wtfsmonitor")+"\n[filter \"y\"]\n\tclean = "+trap("wtclean")+"\n")
	for _, h := range []string{"pre-commit", "post-commit", "post-merge", "reference-transaction", "post-checkout"} {
		write(t, marks, h, "#!/bin/sh\ntouch "+filepath.Join(marks, "hook-"+h)+"\n")
		os.Chmod(filepath.Join(marks, h), 0o755)
	}
	t.Setenv("GIT_EXTERNAL_DIFF", filepath.Join(marks, "envdiff"))
	t.Setenv("GIT_PAGER", trap("envpager"))
	t.Setenv("GIT_CONFIG_PARAMETERS", "'core.fsmonitor="+trap("envparam")+"'")
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "core.pager")
	t.Setenv("GIT_CONFIG_VALUE_0", trap("envcount"))
	t.Setenv("GIT_DIR", filepath.Join(marks, "nowhere"))

	write(t, wt.Dir, ".gitattributes", "* filter=x diff=x merge=x\n*.y filter=y\n")
	write(t, wt.Dir, "f.txt", "agent's work\n")
	write(t, wt.Dir, "n.y", "new\n")

	d, err := m.Diff(ctx, wt, true)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Patch, "+agent's work") || !strings.Contains(d.Patch, "+new") {
		t.Fatalf("the diff does not show the true content:\n%s", d.Patch)
	}
	if _, err := m.Merge(ctx, wt, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, repo, "f.txt"); got != "agent's work\n" {
		t.Fatalf("merged %q", got)
	}
	ents, _ := os.ReadDir(marks)
	var ran []string
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), "-commit") && !strings.HasPrefix(e.Name(), "post-") && !strings.HasPrefix(e.Name(), "pre-") && e.Name() != "reference-transaction" {
			ran = append(ran, e.Name())
		}
	}
	if len(ran) > 0 {
		t.Fatalf("programs named by configuration or environment ran: %v", ran)
	}
}

// confinedWork makes what a confined agent leaves in its private git
// state: a commit of the worktree written into its own object store, and
// its branch's private ref at it. It returns the commit.
func confinedWork(t *testing.T, m *Manager, wt Worktree, p Private, file, text string) string {
	t.Helper()
	write(t, wt.Dir, file, text)
	idx := filepath.Join(t.TempDir(), "index")
	common := filepath.Join(wt.Repo, ".git")
	env := append(os.Environ(), "GIT_DIR="+adminDir(wt), "GIT_COMMON_DIR="+common, "GIT_WORK_TREE="+wt.Dir,
		"GIT_INDEX_FILE="+idx, "GIT_OBJECT_DIRECTORY="+p.Objects, "GIT_ALTERNATE_OBJECT_DIRECTORIES="+filepath.Join(common, "objects"),
		"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@x")
	g := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = wt.Dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	g("read-tree", "HEAD")
	g("add", "-A")
	tree := g("write-tree")
	c := g("commit-tree", tree, "-p", "HEAD", "-m", "agent")
	if err := os.WriteFile(filepath.Join(p.Refs, filepath.Base(wt.Branch)), []byte(c+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

func newConfined(t *testing.T) (*Manager, Worktree, Private) {
	repo := newRepo(t)
	m := &Manager{Quarantine: t.TempDir()}
	wt := create(t, m, repo, "t1", "")
	p, err := m.PreparePrivate(context.Background(), wt)
	if err != nil {
		t.Fatal(err)
	}
	return m, wt, p
}

// looseFile is the file of an object in a store.
func looseFile(store, name string) string { return filepath.Join(store, name[:2], name[2:]) }

// A confined agent's commit reaches the branch checked; the repository's
// own objects gain it only then, and the store keeps nothing brought in.
func TestImportBringsCheckedWork(t *testing.T) {
	m, wt, p := newConfined(t)
	ctx := context.Background()
	c := confinedWork(t, m, wt, p, "f.txt", "agent's work\n")
	if _, err := m.git(ctx, wt.Repo, "cat-file", "-e", c); err == nil {
		t.Fatal("the agent's commit is in the repository before any check")
	}
	if err := m.Import(ctx, wt); err != nil {
		t.Fatal(err)
	}
	if got := run(t, wt.Repo, "rev-parse", wt.Branch); got != c {
		t.Fatalf("branch at %s, want %s", got, c)
	}
	if got := run(t, wt.Repo, "show", wt.Branch+":f.txt"); got != "agent's work" {
		t.Fatalf("the branch reads %q", got)
	}
	run(t, wt.Repo, "fsck", "--strict", "--no-dangling")
	if names, _ := looseNames(p.Objects); len(names) != 0 {
		t.Fatalf("the private store kept what was brought in: %v", names)
	}
	// Diff and merge see it; the merge commits as the operator.
	d, err := m.Diff(ctx, wt, true)
	if err != nil || !strings.Contains(d.Patch, "+agent's work") {
		t.Fatalf("diff: %v\n%s", err, d.Patch)
	}
}

// A substituted, corrupt or missing object, or a ref that is not an
// object name, is refused with ErrUntrusted and changes nothing.
func TestImportRefusesWhatDoesNotCheck(t *testing.T) {
	cases := map[string]func(t *testing.T, m *Manager, wt Worktree, p Private, c string){
		"substituted blob": func(t *testing.T, m *Manager, wt Worktree, p Private, c string) {
			name := blobOf(t, p, c, "f.txt")
			var z bytes.Buffer
			w := zlib.NewWriter(&z)
			w.Write([]byte("blob 8\x00evil!!!\n"))
			w.Close()
			os.Chmod(looseFile(p.Objects, name), 0o644)
			if err := os.WriteFile(looseFile(p.Objects, name), z.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"corrupt object": func(t *testing.T, m *Manager, wt Worktree, p Private, c string) {
			name := blobOf(t, p, c, "f.txt")
			os.Chmod(looseFile(p.Objects, name), 0o644)
			os.WriteFile(looseFile(p.Objects, name), []byte("not zlib at all"), 0o644)
		},
		"missing object": func(t *testing.T, m *Manager, wt Worktree, p Private, c string) {
			os.Remove(looseFile(p.Objects, blobOf(t, p, c, "f.txt")))
		},
		"symbolic ref": func(t *testing.T, m *Manager, wt Worktree, p Private, c string) {
			os.WriteFile(filepath.Join(p.Refs, filepath.Base(wt.Branch)), []byte("ref: refs/heads/main\n"), 0o644)
		},
		"ref as a link": func(t *testing.T, m *Manager, wt Worktree, p Private, c string) {
			ref := filepath.Join(p.Refs, filepath.Base(wt.Branch))
			os.Remove(ref)
			os.Symlink(filepath.Join(wt.Repo, ".git", "refs", "heads", "main"), ref)
		},
		"object as a link": func(t *testing.T, m *Manager, wt Worktree, p Private, c string) {
			f := looseFile(p.Objects, blobOf(t, p, c, "f.txt"))
			os.Remove(f)
			os.Symlink(looseFile(filepath.Join(wt.Repo, ".git", "objects"), run(t, wt.Repo, "rev-parse", "HEAD:f.txt")), f)
		},
		"alternate planted": func(t *testing.T, m *Manager, wt Worktree, p Private, c string) {
			// Its own alternates would lend it another store's objects:
			// never read on the host.
			other := t.TempDir()
			os.Rename(looseFile(p.Objects, blobOf(t, p, c, "f.txt")), filepath.Join(other, "moved"))
			os.MkdirAll(filepath.Join(other, "store"), 0o755)
			os.WriteFile(filepath.Join(p.Objects, "info", "alternates"), []byte(filepath.Join(other, "store")+"\n"), 0o644)
		},
	}
	for name, plant := range cases {
		t.Run(name, func(t *testing.T) {
			m, wt, p := newConfined(t)
			ctx := context.Background()
			before := run(t, wt.Repo, "rev-parse", wt.Branch)
			c := confinedWork(t, m, wt, p, "f.txt", "agent's work\n")
			plant(t, m, wt, p, c)
			err := m.Import(ctx, wt)
			if !errors.Is(err, ErrUntrusted) {
				t.Fatalf("import: %v, want ErrUntrusted", err)
			}
			if !strings.Contains(err.Error(), "nothing was brought in") {
				t.Fatalf("the error does not say nothing changed: %v", err)
			}
			if got := run(t, wt.Repo, "rev-parse", wt.Branch); got != before {
				t.Fatalf("the branch moved to %s", got)
			}
			if _, err := m.Diff(ctx, wt, false); !errors.Is(err, ErrUntrusted) {
				t.Fatalf("diff: %v, want ErrUntrusted", err)
			}
			if _, err := m.Merge(ctx, wt, MergeOptions{}); !errors.Is(err, ErrUntrusted) {
				t.Fatalf("merge: %v, want ErrUntrusted", err)
			}
			if got := read(t, wt.Repo, "f.txt"); got != "one\n" {
				t.Fatalf("the main checkout changed: %q", got)
			}
			run(t, wt.Repo, "fsck", "--strict", "--no-dangling")
			ents, _ := os.ReadDir(filepath.Join(wt.Repo, ".git", "objects"))
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), "kandev-incoming-") {
					t.Fatalf("a quarantine was left in the repository: %s", e.Name())
				}
			}
		})
	}
}

// blobOf is the name of path's blob in commit c of the private store.
func blobOf(t *testing.T, p Private, c, path string) string {
	t.Helper()
	// The store alone is no repository: read it as a scratch
	// repository's objects.
	cmd := exec.Command("git", "rev-parse", c+":"+path)
	scratch := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", "--bare", scratch).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	cmd.Env = append(os.Environ(), "GIT_DIR="+scratch, "GIT_OBJECT_DIRECTORY="+p.Objects)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("rev-parse %s:%s: %v", c, path, err)
	}
	return strings.TrimSpace(string(out))
}
