package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// copyIncludes copies the files of the main checkout that match
// .worktreeinclude and that git ignores into the worktree. git itself
// matches the patterns (ls-files --exclude-from), so they mean exactly what
// they mean in a .gitignore. Tracked files are never copied (the checkout
// has them), nor untracked files git does not ignore: a merge commits the
// worktree's untracked files, and a secret must not ride along. What was
// copied is recorded in the worktree's git admin directory, so that no
// merge or archive ever commits it (ADR 0041).
func (m *Manager) copyIncludes(ctx context.Context, repo, dir string) ([]string, error) {
	include := filepath.Join(repo, ".worktreeinclude")
	if fi, err := os.Lstat(include); err != nil || !fi.Mode().IsRegular() {
		return nil, nil // none, or a link or device: not the user's list
	}
	out, err := m.git(ctx, repo, "ls-files", "-z", "--others", "--ignored", "--exclude-from="+include)
	if err != nil {
		return nil, fmt.Errorf("list .worktreeinclude files: %w", err)
	}
	if strings.Trim(out, "\x00") == "" {
		return nil, nil
	}
	ignored, err := m.gitIn(ctx, repo, nil, out, "check-ignore", "-z", "--stdin")
	if err != nil && exitCode(errors.Unwrap(err)) != 1 { // 1: none of them is ignored
		return nil, fmt.Errorf("check .worktreeinclude files: %w", err)
	}
	var copied []string
	for _, rel := range splitNUL(ignored) {
		ok, err := copyInclude(repo, dir, rel)
		if err != nil {
			return copied, fmt.Errorf("copy %s from .worktreeinclude: %w", rel, err)
		}
		if ok {
			copied = append(copied, rel)
		}
	}
	if len(copied) > 0 {
		gitDir, err := m.git(ctx, dir, "rev-parse", "--absolute-git-dir")
		if err != nil {
			return copied, fmt.Errorf("record .worktreeinclude copies: %w", err)
		}
		rec := filepath.Join(strings.TrimSpace(gitDir), includedFile)
		if err := os.WriteFile(rec, []byte(strings.Join(copied, "\x00")+"\x00"), 0o600); err != nil {
			return copied, fmt.Errorf("record .worktreeinclude copies: %w", err)
		}
	}
	return copied, nil
}

// includedFile, in a worktree's git admin directory, lists the files
// .worktreeinclude copied into it (NUL-separated).
const includedFile = "kandev-included"

// included returns the files .worktreeinclude copied into the worktree.
func (m *Manager) included(ctx context.Context, dir string) []string {
	gitDir, err := m.git(ctx, dir, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return nil
	}
	b, err := readBounded(filepath.Join(strings.TrimSpace(gitDir), includedFile), 16<<20)
	if err != nil {
		return nil
	}
	return splitNUL(string(b))
}

// copyInclude copies one file .worktreeinclude names from the main
// checkout into the worktree, and only a regular file: read through
// directories of the main checkout that are not links, written through
// directories of the worktree that are not links (the task's branch may
// track a link there, pointing anywhere), never following a link at
// either end, with the source's permissions (0600 stays 0600). It reports
// false for a file it leaves out: a link, a device, a path through a link,
// a file the branch already has.
func copyInclude(repo, dir, rel string) (bool, error) {
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return false, nil
		}
	}
	base, parents := parts[len(parts)-1], parts[:len(parts)-1]
	// Each directory is opened relative to the one before, refusing links,
	// so nothing can swap a component for a link between check and use.
	srcDir, err := openDirBeneath(repo, parents, false)
	if skipped(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer syscall.Close(srcDir)
	// O_NONBLOCK: a FIFO opens without a writer, and is then left out.
	fd, err := unix.Openat(srcDir, base, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
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
	dstDir, err := openDirBeneath(dir, parents, true)
	if skipped(err) {
		return false, nil // a link (or a file) of the branch: the copy would leave the worktree
	}
	if err != nil {
		return false, err
	}
	defer syscall.Close(dstDir)
	fd, err = unix.Openat(dstDir, base, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if errors.Is(err, syscall.EEXIST) || skipped(err) {
		return false, nil // the branch has its own
	}
	if err != nil {
		return false, err
	}
	out := os.NewFile(uintptr(fd), rel)
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return false, err
	}
	// Exactly the source's permissions, whatever the umask.
	if err := out.Chmod(fi.Mode().Perm()); err != nil {
		out.Close()
		return false, err
	}
	return true, out.Close()
}

// openDirBeneath opens the directory root/parents... without following a
// link at any component below root; with create, missing directories are
// made (0755). It returns a file descriptor the caller closes.
func openDirBeneath(root string, parents []string, create bool) (int, error) {
	const dirFlags = syscall.O_RDONLY | syscall.O_DIRECTORY | syscall.O_NOFOLLOW | syscall.O_CLOEXEC
	fd, err := syscall.Open(root, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, c := range parents {
		next, err := unix.Openat(fd, c, dirFlags, 0)
		if errors.Is(err, syscall.ENOENT) && create {
			if err = unix.Mkdirat(fd, c, 0o755); err == nil || errors.Is(err, syscall.EEXIST) {
				next, err = unix.Openat(fd, c, dirFlags, 0)
			}
		}
		syscall.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// skipped says an open failed because of what the path is (a link, a file
// where a directory belongs, nothing at all): the file is left out.
func skipped(err error) bool {
	return errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ENOENT)
}

// readBounded reads a regular file of at most max bytes.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return b, nil
}
