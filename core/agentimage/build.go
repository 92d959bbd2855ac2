// Package agentimage builds a container image for a profile offline, from
// the agent as it is installed on this machine (kandev image build,
// docs/sandbox.md): the agent's runtime closure (its files, the node_modules
// tree or install prefix it runs from, its #! interpreters, the shared
// libraries each native file links), a shell, git and the common tools an
// agent runs, a passwd and group naming the user it runs as, and the CA
// certificates, streamed as a tar into `docker import` (or podman's). No
// registry and no Dockerfile is involved.
package agentimage

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kandev/kandev/core/sandbox"
)

// Tools are put in every image where this machine has them: what agents
// run through their shell tool, and git for the worktree.
var Tools = []string{"sh", "bash", "env", "git", "ls", "cat", "cp", "mv", "rm", "mkdir", "rmdir", "touch", "chmod",
	"ln", "pwd", "echo", "printf", "test", "true", "false", "grep", "sed", "awk", "find", "xargs", "head", "tail",
	"sort", "uniq", "wc", "cut", "tr", "diff", "patch", "tee", "basename", "dirname", "realpath", "readlink",
	"date", "sleep", "id", "uname", "which", "rg", "tar", "gzip", "kill", "ps"}

// caFiles are the CA bundles an agent's HTTPS client looks for.
var caFiles = []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"}

// Options say what to build.
type Options struct {
	// Engine is docker or podman.
	Engine string
	Tag    string
	// Executables are the agent's command (as found on PATH) and anything
	// else to put in with its closure (the kandev binary, --with tools).
	Executables []string
	// Tools are looked up on PATH and put in with their libraries where
	// found; nil is the package's Tools.
	Tools []string
	// Progress receives a line per stage; nil discards.
	Progress io.Writer
}

// Result is what was built.
type Result struct {
	Tag   string `json:"tag"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
	// PATH is the image's PATH: the directories of every executable put in.
	PATH string `json:"path"`
	// Missing are tools not found here (left out).
	Missing []string `json:"missing,omitempty"`
}

// Build collects the closure and imports it as the tag.
func Build(ctx context.Context, o Options) (Result, error) {
	if o.Engine != "docker" && o.Engine != "podman" {
		return Result{}, fmt.Errorf("image build: engine %q: want docker or podman", o.Engine)
	}
	if o.Tag == "" {
		return Result{}, errors.New("image build: no tag")
	}
	if o.Tools == nil {
		o.Tools = Tools
	}
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	c := newClosure()
	var bins []string
	for _, exe := range o.Executables {
		if err := c.executable(exe); err != nil {
			return Result{}, err
		}
		// The interpreters its #! lines find on PATH must be found on
		// the image's PATH too (a node of nvm's, not /usr/bin's).
		bins = append(append(bins, exe), sandbox.Interpreters(sandbox.OS{}, exe)...)
	}
	var missing []string
	for _, tool := range o.Tools {
		p, err := exec.LookPath(tool)
		if err != nil {
			missing = append(missing, tool)
			continue
		}
		if err := c.executable(p); err != nil {
			return Result{}, err
		}
		bins = append(bins, p)
	}
	for _, p := range caFiles {
		if _, err := os.Stat(p); err == nil {
			c.file(p)
			break
		}
	}
	if err := c.libraries(ctx); err != nil {
		return Result{}, err
	}
	path := imagePATH(bins)
	fmt.Fprintf(progress, "collected %d paths (%d native files linked); importing into %s as %s\n", len(c.paths), c.natives, o.Engine, o.Tag)
	n, size, err := c.importInto(ctx, o.Engine, o.Tag, path)
	if err != nil {
		return Result{}, err
	}
	return Result{Tag: o.Tag, Files: n, Bytes: size, PATH: path, Missing: missing}, nil
}

// closure is the set of host paths that go into the image.
type closure struct {
	paths   map[string]bool
	dirs    map[string]bool
	natives int
}

func newClosure() *closure { return &closure{paths: map[string]bool{}, dirs: map[string]bool{}} }

// executable adds exe, what its symlinks lead to, the directories it runs
// from and its #! interpreters (sandbox.Runtime).
func (c *closure) executable(exe string) error {
	if _, err := os.Stat(exe); err != nil {
		return fmt.Errorf("image build: %w", err)
	}
	home, _ := os.UserHomeDir()
	files, dirs := sandbox.Runtime(sandbox.OS{}, exe, home)
	for _, f := range files {
		c.file(f)
	}
	for _, d := range dirs {
		c.dirs[d] = true
	}
	return nil
}

// file adds one path and every symlink on the way to its target.
func (c *closure) file(p string) {
	for range 16 {
		if c.paths[p] {
			return
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return
		}
		c.paths[p] = true
		if fi.Mode()&fs.ModeSymlink == 0 {
			return
		}
		t, err := os.Readlink(p)
		if err != nil {
			return
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p = filepath.Clean(t)
	}
}

// libraries adds the shared libraries of every native file in the
// closure, as the dynamic linker here resolves them (ldd).
func (c *closure) libraries(ctx context.Context) error {
	var natives []string
	for p := range c.paths {
		if isELF(p) {
			natives = append(natives, p)
		}
	}
	for d := range c.dirs {
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return nil // unreadable parts are left out, as the sandbox would
			}
			if e.Type().IsRegular() && isELF(p) {
				natives = append(natives, p)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	c.natives = len(natives)
	for _, p := range natives {
		out, err := exec.CommandContext(ctx, "ldd", p).Output()
		if err != nil {
			continue // static, or not for this machine: nothing to add
		}
		for _, f := range strings.Fields(string(out)) {
			if strings.HasPrefix(f, "/") {
				c.file(f)
			}
		}
	}
	return nil
}

func isELF(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil {
		return false
	}
	return string(magic[:]) == "\x7fELF"
}

// imagePATH is the directories of the executables, then the usual ones.
func imagePATH(bins []string) string {
	seen := map[string]bool{}
	var dirs []string
	for _, b := range append(bins, "/usr/local/bin/x", "/usr/bin/x", "/bin/x") {
		if d := filepath.Dir(b); !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	return strings.Join(dirs, ":")
}

// importInto streams the closure as a tar into ENGINE import and returns
// the entries and bytes written.
func (c *closure) importInto(ctx context.Context, engine, tag, path string) (int, int64, error) {
	pr, pw := io.Pipe()
	cmd := exec.CommandContext(ctx, engine, "import", "--change", "ENV PATH="+path, "-", tag)
	cmd.Stdin = pr
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		return 0, 0, fmt.Errorf("image build: %s import: %w", engine, err)
	}
	counter := &countingWriter{w: pw}
	n, werr := c.writeTar(counter)
	pw.CloseWithError(werr)
	err := cmd.Wait()
	if werr != nil {
		return 0, 0, fmt.Errorf("image build: %w", werr)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("image build: %s import: %v: %s", engine, err, strings.TrimSpace(stderr.String()))
	}
	return n, counter.n, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeTar writes the image's file system: the closure's paths and
// directories at their real paths, their parents, and the generated /etc.
func (c *closure) writeTar(w io.Writer) (int, error) {
	tw := tar.NewWriter(w)
	entries := 0
	written := map[string]bool{}
	mtime := time.Unix(0, 0)
	dir := func(p string, mode int64) error {
		if written[p] {
			return nil
		}
		written[p] = true
		entries++
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(p, "/") + "/", Mode: mode, ModTime: mtime})
	}
	parents := func(p string) error {
		var chain []string
		for d := filepath.Dir(p); d != "/" && d != "."; d = filepath.Dir(d) {
			chain = append(chain, d)
		}
		for i := len(chain) - 1; i >= 0; i-- {
			if err := dir(chain[i], 0o755); err != nil {
				return err
			}
		}
		return nil
	}
	add := func(p string) error {
		if written[p] {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return nil // gone since it was found
		}
		if err := parents(p); err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			return dir(p, int64(fi.Mode().Perm()))
		case fi.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return nil
			}
			written[p] = true
			entries++
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: strings.TrimPrefix(p, "/"), Linkname: t, Mode: 0o777, ModTime: mtime})
		case fi.Mode().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return nil // unreadable: left out
			}
			defer f.Close()
			written[p] = true
			entries++
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(p, "/"), Size: fi.Size(), Mode: int64(fi.Mode().Perm()), ModTime: mtime}); err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			return err
		}
		return nil // sockets, devices, pipes: never in an image
	}
	var all []string
	for p := range c.paths {
		all = append(all, p)
	}
	for d := range c.dirs {
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil {
				all = append(all, p)
			}
			return nil
		})
		if err != nil {
			return entries, err
		}
	}
	sort.Strings(all)
	for _, p := range all {
		if err := add(p); err != nil {
			return entries, err
		}
	}
	for _, d := range []string{"/tmp", "/proc", "/dev", "/sys", "/etc", "/root"} {
		mode := int64(0o755)
		if d == "/tmp" {
			mode = 0o1777
		}
		if err := dir(d, mode); err != nil {
			return entries, err
		}
	}
	for name, body := range etcFiles() {
		if written[name] {
			continue
		}
		written[name] = true
		entries++
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(name, "/"), Size: int64(len(body)), Mode: 0o644, ModTime: mtime}); err != nil {
			return entries, err
		}
		if _, err := io.WriteString(tw, body); err != nil {
			return entries, err
		}
	}
	return entries, tw.Close()
}

// etcFiles are written for the image, never copied from this machine's
// /etc (which holds other accounts and hashes): the account the agent runs
// as (kandev runs a container as your uid:gid, at your home's path), and
// the lookups' order.
func etcFiles() map[string]string {
	passwd := "root:x:0:0:root:/root:/bin/sh\n"
	group := "root:x:0:\n"
	if u, err := user.Current(); err == nil && u.Uid != "0" {
		passwd += fmt.Sprintf("%s:x:%s:%s:%s:%s:/bin/sh\n", u.Username, u.Uid, u.Gid, u.Username, u.HomeDir)
		name := u.Username
		if g, err := user.LookupGroupId(u.Gid); err == nil {
			name = g.Name
		}
		if gid, _ := strconv.Atoi(u.Gid); gid != 0 {
			group += fmt.Sprintf("%s:x:%s:\n", name, u.Gid)
		}
	}
	return map[string]string{
		"/etc/passwd":        passwd,
		"/etc/group":         group,
		"/etc/nsswitch.conf": "passwd: files\ngroup: files\nhosts: files dns\n",
	}
}
