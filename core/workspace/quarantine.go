package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// A confined agent's git writes only into state of its own (ADR 0065):
// its new objects go to a private object store (the repository's own
// objects are read-only to it, reached as an alternate), its worktree's
// administrative directory (HEAD, index, config.worktree) is a private
// copy, and so is the directory of its branch's ref. Nothing there is
// ever read by git on the host as a repository: kandev copies the agent's
// objects out as plain files, has git name each by its content and check
// it (index-pack --strict: every object's hash, its form and its links),
// checks that the branch's new head is a commit whose history is all
// there, and only then moves the pack into the repository and the branch
// to that head. A corrupt or substituted object is refused and changes
// nothing. This happens before every operation that reads the branch
// (diff, merge, push, an archive, a child's worktree) and at a turn's end.

// ErrUntrusted is wrapped when a confined task's work cannot be brought
// into the repository because its objects or its branch do not check.
var ErrUntrusted = errors.New("the task's git objects do not check")

// maxObjectFile bounds one object file copied out of a private store.
const maxObjectFile = 1 << 30

// Private is a confined worktree's own git state on the host.
type Private struct {
	Dir     string
	Objects string // its object store, mounted over <repo>/.git/objects
	Shared  string // where the repository's objects appear, read-only, inside
	Admin   string // its administrative directory, mounted over the real one
	Refs    string // the directory of its branch's ref, mounted over the real one
	Logs    string // that directory's reflogs
}

// PrivateOf names wt's private git state ("" Dir without a Quarantine).
func (m *Manager) PrivateOf(wt Worktree) Private {
	if m.Quarantine == "" || wt.Dir == "" {
		return Private{}
	}
	sum := sha256.Sum256([]byte(filepath.Clean(wt.Dir)))
	d := filepath.Join(m.Quarantine, hex.EncodeToString(sum[:8]))
	return Private{Dir: d, Objects: filepath.Join(d, "objects"), Shared: filepath.Join(d, "shared-objects"),
		Admin: filepath.Join(d, "admin"), Refs: filepath.Join(d, "refs"), Logs: filepath.Join(d, "logs")}
}

// PreparePrivate makes wt's private git state, or brings an existing one
// up to what the host holds: the alternate naming the repository's
// objects, the administrative files git needs (its HEAD and index copied
// once), and the branch's ref at the host's head when the agent has none.
func (m *Manager) PreparePrivate(ctx context.Context, wt Worktree) (Private, error) {
	p := m.PrivateOf(wt)
	if p.Dir == "" {
		return p, errors.New("quarantine: no directory for private git state")
	}
	defer m.lock(wt.Repo)()
	admin := adminDir(wt)
	if admin == "" {
		return p, fmt.Errorf("quarantine: %s lists no worktree %s", wt.Repo, wt.Dir)
	}
	for _, d := range []string{p.Dir, filepath.Join(p.Objects, "info"), filepath.Join(p.Objects, "pack"), p.Shared, p.Admin, p.Refs, p.Logs} {
		if err := mkdirOwn(d); err != nil {
			return p, fmt.Errorf("quarantine: %w", err)
		}
	}
	if err := replaceFile(filepath.Join(p.Objects, "info"), "alternates", []byte(p.Shared+"\n")); err != nil {
		return p, fmt.Errorf("quarantine: %w", err)
	}
	for _, name := range []string{"commondir", "gitdir", "HEAD", "index"} {
		keep := name == "HEAD" || name == "index"
		if _, err := os.Lstat(filepath.Join(p.Admin, name)); keep && err == nil {
			continue // the agent's own since
		}
		b, err := readBounded(filepath.Join(admin, name), maxObjectFile)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return p, fmt.Errorf("quarantine: %w", err)
		}
		if err := replaceFile(p.Admin, name, b); err != nil {
			return p, fmt.Errorf("quarantine: %w", err)
		}
	}
	if ref := filepath.Base(wt.Branch); wt.Branch != "" {
		if _, err := os.Lstat(filepath.Join(p.Refs, ref)); err != nil {
			if tip, err := m.resolve(ctx, wt.Repo, "refs/heads/"+wt.Branch); err == nil {
				if err := replaceFile(p.Refs, ref, []byte(tip+"\n")); err != nil {
					return p, fmt.Errorf("quarantine: %w", err)
				}
			}
		}
	}
	return p, nil
}

// RemovePrivate removes wt's private git state (with its worktree).
func (m *Manager) RemovePrivate(wt Worktree) error {
	if p := m.PrivateOf(wt); p.Dir != "" {
		return os.RemoveAll(p.Dir)
	}
	return nil
}

// Import brings the work a confined agent committed on its branch into
// the repository, checked; a worktree that was never confined has nothing
// to bring.
func (m *Manager) Import(ctx context.Context, wt Worktree) error {
	if p := m.PrivateOf(wt); p.Dir == "" || !isDir(p.Dir) {
		return nil
	}
	defer m.lock(wt.Repo)()
	return m.importLocked(ctx, wt)
}

// importLocked is Import under the repository's lock.
func (m *Manager) importLocked(ctx context.Context, wt Worktree) error {
	p := m.PrivateOf(wt)
	if p.Dir == "" || !isDir(p.Dir) || wt.Branch == "" {
		return nil
	}
	tip, err := readRef(p.Refs, filepath.Base(wt.Branch))
	if errors.Is(err, os.ErrNotExist) {
		return nil // the agent made no commit there, or removed its branch
	}
	if err != nil {
		return fmt.Errorf("%w: the branch %s in the task's sandbox: %v; nothing was brought in", ErrUntrusted, wt.Branch, err)
	}
	ref := "refs/heads/" + wt.Branch
	cur, _ := m.resolve(ctx, wt.Repo, ref)
	if tip == cur {
		return nil
	}
	if _, err := m.git(ctx, wt.Repo, "cat-file", "-e", tip+"^{commit}"); err != nil {
		if err := m.quarantineIn(ctx, wt, p, tip); err != nil {
			return fmt.Errorf("%w: the work on %s (commit %s) in the task's sandbox: %v; nothing was brought in", ErrUntrusted, wt.Branch, shortRef(tip), err)
		}
	}
	if _, err := m.git(ctx, wt.Repo, "update-ref", "-m", "kandev: the task's commits, checked", ref, tip, cur); err != nil {
		return fmt.Errorf("bring %s to the task's commit %s: %w", wt.Branch, shortRef(tip), err)
	}
	return nil
}

// quarantineIn copies the agent's objects out, has git check and index
// them in a directory of their own beside the repository's objects, checks
// that tip's history is whole, and moves the checked pack in.
func (m *Manager) quarantineIn(ctx context.Context, wt Worktree, p Private, tip string) error {
	common := filepath.Join(wt.Repo, ".git")
	objects := filepath.Join(common, "objects")
	scratch, err := os.MkdirTemp("", "kandev-import-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	copied := filepath.Join(scratch, "objects")
	taken, err := copyObjects(p.Objects, copied, scratch)
	if err != nil {
		return err
	}
	// The agent's own packs are unpacked into the copy; unpack-objects
	// names what it writes by its content.
	for _, pack := range taken.packs {
		f, err := os.Open(pack)
		if err != nil {
			return err
		}
		_, err = m.runner.Run(ctx, GitCall{Dir: wt.Repo, Stdin: f, Timeout: m.Timeout,
			Env:  []string{"GIT_DIR=" + common, "GIT_OBJECT_DIRECTORY=" + copied, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + objects},
			Args: []string{"unpack-objects", "-q"}})
		f.Close()
		if err != nil {
			return fmt.Errorf("a pack of the sandbox's: %w", err)
		}
	}
	names, err := looseNames(copied)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return errors.New("the commit is not among the sandbox's objects")
	}
	incoming, err := os.MkdirTemp(objects, "kandev-incoming-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(incoming)
	all := filepath.Join(scratch, "all.pack")
	out, err := os.Create(all)
	if err != nil {
		return err
	}
	// Packed from the copy alone: nothing the repository holds rides in.
	err = m.runner.Stream(ctx, GitCall{Dir: wt.Repo, Stdin: strings.NewReader(strings.Join(names, "\n") + "\n"), Timeout: m.Timeout,
		Env:  []string{"GIT_DIR=" + common, "GIT_OBJECT_DIRECTORY=" + copied},
		Args: []string{"pack-objects", "--stdout", "-q", "--window=0", "--no-reuse-object"}}, out)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("read the sandbox's objects: %w", err)
	}
	in, err := os.Open(all)
	if err != nil {
		return err
	}
	defer in.Close()
	checked := []string{"GIT_DIR=" + common, "GIT_OBJECT_DIRECTORY=" + incoming, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + objects}
	if _, err := m.runner.Run(ctx, GitCall{Dir: wt.Repo, Stdin: in, Env: checked, Timeout: m.Timeout,
		Args: []string{"index-pack", "--strict", "--stdin"}}); err != nil {
		return fmt.Errorf("check the sandbox's objects: %w", err)
	}
	if t, err := m.runner.Run(ctx, GitCall{Dir: wt.Repo, Env: checked, Timeout: m.Timeout, Args: []string{"cat-file", "-t", tip}}); err != nil || strings.TrimSpace(t) != "commit" {
		return errors.New("the branch names no commit the sandbox holds")
	}
	if _, err := m.runner.Run(ctx, GitCall{Dir: wt.Repo, Env: checked, Timeout: m.Timeout,
		Args: []string{"rev-list", "--objects", "--quiet", tip, "--not", "--all"}}); err != nil {
		return fmt.Errorf("its history is not whole: %w", err)
	}
	if err := migratePacks(filepath.Join(incoming, "pack"), filepath.Join(objects, "pack")); err != nil {
		return err
	}
	taken.remove()
	return nil
}

// taken is what copyObjects copied out of a private store, to remove
// from it once the repository holds it.
type taken struct {
	loose []string // objects/xx/name, relative
	packs []string // copies of the store's packs, in the scratch directory
	root  string
	orig  []string // the store's pack files
}

func (t taken) remove() {
	for _, rel := range t.loose {
		dir, name := filepath.Split(rel)
		if fd, err := openDirBeneath(t.root, []string{strings.Trim(dir, "/")}, false); err == nil {
			unix.Unlinkat(fd, name, 0)
			syscall.Close(fd)
		}
	}
	for _, p := range t.orig {
		base := strings.TrimSuffix(p, ".pack")
		for _, ext := range []string{".pack", ".idx", ".rev", ".keep"} {
			if fd, err := openDirBeneath(t.root, []string{"pack"}, false); err == nil {
				unix.Unlinkat(fd, filepath.Base(base)+ext, 0)
				syscall.Close(fd)
			}
		}
	}
}

// copyObjects copies a private store's loose objects (files of the form
// xx/<hex> only, regular, never through a link) into dst, and its packs'
// data into scratch. Anything else there (info/alternates, indexes, links,
// FIFOs) is not read: it would be a pointer the agent wrote.
func copyObjects(src, dst, scratch string) (taken, error) {
	t := taken{root: src}
	root, err := openDirBeneath(src, nil, false)
	if err != nil {
		return t, err
	}
	defer syscall.Close(root)
	ents, err := os.ReadDir(src)
	if err != nil {
		return t, err
	}
	for _, e := range ents {
		name := e.Name()
		if len(name) != 2 || !isHex(name) || !e.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(src, name))
		if err != nil {
			continue
		}
		for _, f := range files {
			if n := len(f.Name()); (n != 38 && n != 62) || !isHex(f.Name()) || !f.Type().IsRegular() {
				continue
			}
			rel := name + "/" + f.Name()
			ok, err := copyRegular(src, rel, filepath.Join(dst, name), f.Name())
			if err != nil {
				return t, fmt.Errorf("copy object %s: %w", rel, err)
			}
			if ok {
				t.loose = append(t.loose, rel)
			}
		}
	}
	packs, _ := os.ReadDir(filepath.Join(src, "pack"))
	for i, f := range packs {
		if !strings.HasPrefix(f.Name(), "pack-") || !strings.HasSuffix(f.Name(), ".pack") || !f.Type().IsRegular() {
			continue
		}
		name := fmt.Sprintf("in-%d.pack", i)
		ok, err := copyRegular(src, "pack/"+f.Name(), scratch, name)
		if err != nil {
			return t, fmt.Errorf("copy pack %s: %w", f.Name(), err)
		}
		if ok {
			t.packs = append(t.packs, filepath.Join(scratch, name))
			t.orig = append(t.orig, f.Name())
		}
	}
	return t, nil
}

// copyRegular copies root/rel, when it is a regular file reached through
// no link and of at most maxObjectFile bytes, to dstDir/name.
func copyRegular(root, rel, dstDir, name string) (bool, error) {
	parts := strings.Split(rel, "/")
	dfd, err := openDirBeneath(root, parts[:len(parts)-1], false)
	if skipped(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer syscall.Close(dfd)
	fd, err := unix.Openat(dfd, parts[len(parts)-1], syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if skipped(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	in := os.NewFile(uintptr(fd), rel)
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return false, err
	}
	if !fi.Mode().IsRegular() {
		return false, nil
	}
	if fi.Size() > maxObjectFile {
		return false, fmt.Errorf("%d bytes, over the %d kandev takes", fi.Size(), maxObjectFile)
	}
	if err := os.MkdirAll(dstDir, 0o700); err != nil {
		return false, err
	}
	out, err := os.OpenFile(filepath.Join(dstDir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return false, err
	}
	if _, err := io.Copy(out, io.LimitReader(in, maxObjectFile)); err != nil {
		out.Close()
		return false, err
	}
	return true, out.Close()
}

// looseNames lists the object names of a store's loose files.
func looseNames(dir string) ([]string, error) {
	var names []string
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if len(e.Name()) != 2 || !e.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			names = append(names, e.Name()+f.Name())
		}
	}
	return names, nil
}

// migratePacks moves checked packs into the repository: each pack's data
// before its index, as git's own quarantine does, so no reader ever finds
// an index without its pack.
func migratePacks(from, to string) error {
	ents, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, last := range []bool{false, true} {
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".idx") != last {
				continue
			}
			if err := os.Rename(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
				return fmt.Errorf("move checked objects in: %w", err)
			}
		}
	}
	return nil
}

// SyncPrivate tells a confined worktree's private state what the host did
// to its branch (a commit of pending work, its undo): the branch's ref and
// the index, so the agent's next turn starts from them.
func (m *Manager) syncPrivate(ctx context.Context, wt Worktree) error {
	p := m.PrivateOf(wt)
	if p.Dir == "" || !isDir(p.Dir) || wt.Branch == "" {
		return nil
	}
	tip, err := m.resolve(ctx, wt.Repo, "refs/heads/"+wt.Branch)
	if err != nil {
		return err
	}
	if err := replaceFile(p.Refs, filepath.Base(wt.Branch), []byte(tip+"\n")); err != nil {
		return err
	}
	if admin := adminDir(wt); admin != "" {
		if b, err := readBounded(filepath.Join(admin, "index"), maxObjectFile); err == nil {
			return replaceFile(p.Admin, "index", b)
		}
	}
	return nil
}

// readRef reads a loose ref the agent wrote, as data: a regular file
// holding one object name and nothing else (a symbolic ref is refused).
func readRef(dir, name string) (string, error) {
	fd, err := openDirBeneath(dir, nil, false)
	if err != nil {
		return "", err
	}
	defer syscall.Close(fd)
	f, err := unix.Openat(fd, name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ENOENT) {
		return "", os.ErrNotExist
	}
	if err != nil {
		return "", err
	}
	file := os.NewFile(uintptr(f), name)
	defer file.Close()
	if fi, err := file.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", errors.New("its ref is not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(file, 256))
	if err != nil {
		return "", err
	}
	v := strings.TrimSuffix(string(b), "\n")
	if (len(v) != 40 && len(v) != 64) || !isHex(v) {
		return "", fmt.Errorf("its ref holds %q, not an object name", truncate(v, 60))
	}
	return v, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s != ""
}

func isDir(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}

// mkdirOwn makes a directory of kandev's own (0700), refusing a link.
func mkdirOwn(d string) error {
	if err := os.MkdirAll(d, 0o700); err != nil {
		return err
	}
	if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", d)
	}
	return nil
}

// replaceFile writes dir/name whole through a temporary file renamed over
// it: a link the agent put there is replaced, never followed.
func replaceFile(dir, name string, b []byte) error {
	f, err := os.CreateTemp(dir, ".kandev-"+name+"-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), filepath.Join(dir, name))
}

// adminDir is the administrative directory the repository lists for wt.
func adminDir(wt Worktree) string {
	for _, kv := range worktreeEnv(wt) {
		if d, ok := strings.CutPrefix(kv, "GIT_DIR="); ok && filepath.Base(d) != noSuchWorktree {
			return d
		}
	}
	return ""
}
