// Package sandbox is the one description of what a confined agent sees
// (ADR 0048): system directories read-only, its worktree read-write at its
// real path with exactly the parts of the main repository's .git a
// worktree needs, a private home kept per task, the paths its profile
// declares, its executable and runtime read-only, a private /tmp, its own
// PID namespace, the kandev binary read-only, and of kandev's sockets only
// mcp.sock. Each mode turns that View into its own arguments: bubblewrap
// flags, docker or podman flags, a macOS Seatbelt profile.
package sandbox

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Mount is one path of the confined view, at the same path inside as
// outside (so paths in prompts, diffs and logs match the host).
type Mount struct {
	Path string
	// Src is what is mounted at Path; empty means Path itself.
	Src string
	RW  bool
	// Tmpfs: an empty private directory rather than a bind.
	Tmpfs bool
	// Why says which rule put it there (for kandev doctor and tests).
	Why string
}

// View is what a confined session sees.
type View struct {
	Mode string
	// Mounts, parents before children.
	Mounts []Mount
	// Home is $HOME inside: the operator's home path, backed by the
	// task's private home.
	Home string
	// Dir is where the agent starts.
	Dir string
	// Network: the agent may reach the network (the default; agents call
	// their model's API).
	Network bool
	// Image is the container image (docker, podman).
	Image string
	// Label marks a container with its session, for stop and the sweep.
	SessionID string
	// User is the container's UID:GID; "" is this process's (a host's
	// container runs as the remote account).
	User string
	// NetworkMode is a container's network when it has one: "" the
	// engine's default, NetworkHost the host's.
	NetworkMode string
	// Forwards are the host's loopback ports the agent reaches at its
	// own, through Forwarder (the kandev binary) run around its command.
	Forwards  []Forward
	Forwarder string
}

// Network modes of a profile (docs/sandbox.md, Network).
const (
	NetworkDefault = ""
	NetworkNone    = "none"
	NetworkHost    = "host"
)

// Input is what Describe builds a View from. Every path is the host's and
// comes from kandev's own records, never from a file the agent could write.
type Input struct {
	Mode  string
	Image string
	// Worktree is the task's working directory, read-write.
	Worktree string
	// Git is the parts of the main repository's .git the worktree needs.
	Git *GitDirs
	// PrivateHome is the task's own home directory on the host, created
	// if missing; it is mounted at OperatorHome.
	PrivateHome  string
	OperatorHome string
	// Paths are the profile's declared paths ("~/.claude", "ro:~/.x").
	Paths []string
	// Executables are the agent's command (as found on PATH) and the
	// kandev binary: each is mounted read-only with the runtime it runs
	// from (its install prefix, its #! interpreter's).
	Executables []string
	// SelfExe is the kandev binary (the mock agent, kandev mcp), mounted
	// read-only as the one file.
	SelfExe string
	// MCPSocket is kandev's agents' socket, the one socket mounted.
	MCPSocket string
	NoNetwork bool
	// Network is the profile's network mode (NetworkDefault, NetworkNone,
	// NetworkHost); NoNetwork is NetworkNone.
	Network string
	// Forwards are host loopback ports the agent reaches at its own, each
	// through a socket in ForwardDir.
	Forwards   []int
	ForwardDir string
	SessionID  string
	// User is a container's UID:GID, "" for this process's.
	User string
	// ReadOnly are paths inside the worktree mounted read-only over it: a
	// shared task's repository's config, hooks and info, which would run
	// on the next git command of the operator's if the agent wrote them.
	ReadOnly []string
	// FS is the machine the paths are on: nil is this one (OS); a host's
	// answers the same questions over ssh.
	FS FS
}

// systemDirs are mounted read-only where they exist.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix", "/run/current-system"}

// IsSystem reports whether path lies under a system directory.
func IsSystem(path string) bool {
	for _, d := range systemDirs {
		if path == d || strings.HasPrefix(path, d+"/") {
			return true
		}
	}
	return false
}

// Describe builds the view of one session.
func Describe(in Input) (View, error) {
	if in.Worktree == "" || !filepath.IsAbs(in.Worktree) {
		return View{}, fmt.Errorf("sandbox: the working directory %q must be an absolute path", in.Worktree)
	}
	fs := in.FS
	if fs == nil {
		fs = OS{}
	}
	v := View{Mode: in.Mode, Home: in.OperatorHome, Dir: in.Worktree, Image: in.Image, SessionID: in.SessionID, User: in.User}
	switch {
	case in.NoNetwork || in.Network == NetworkNone:
		v.NetworkMode = NetworkNone
	case in.Network == NetworkDefault || in.Network == NetworkHost:
		v.NetworkMode, v.Network = in.Network, true
	default:
		return View{}, fmt.Errorf("sandbox: network %q: want none, default or host", in.Network)
	}
	add := func(m Mount) { v.Mounts = append(v.Mounts, m) }
	for _, d := range systemDirs {
		if real, err := fs.EvalSymlinks(d); err == nil && real == d {
			add(Mount{Path: d, Why: "system"})
		} else if err == nil && IsSystem(real) {
			// /bin -> usr/bin on merged-/usr systems: the link itself.
			add(Mount{Path: d, Src: d, Why: "system"})
		}
	}
	add(Mount{Path: "/tmp", Tmpfs: true, RW: true, Why: "private /tmp"})
	if in.OperatorHome != "" && in.PrivateHome != "" {
		if err := fs.MkdirAll(in.PrivateHome, 0o700); err != nil {
			return View{}, fmt.Errorf("sandbox: private home: %w", err)
		}
		add(Mount{Path: in.OperatorHome, Src: in.PrivateHome, RW: true, Why: "private home"})
	}
	for _, p := range in.Paths {
		ro := strings.HasPrefix(p, "ro:")
		p = strings.TrimPrefix(p, "ro:")
		p = expandHome(p, in.OperatorHome)
		if !filepath.IsAbs(p) {
			return View{}, fmt.Errorf("sandbox: declared path %q must be absolute or start with ~/", p)
		}
		if !fs.Exists(p) {
			continue // an agent not set up yet: nothing to mount
		}
		add(Mount{Path: p, RW: !ro, Why: "profile"})
	}
	for _, exe := range in.Executables {
		for _, d := range runtimeDirs(fs, exe, in.OperatorHome) {
			add(Mount{Path: d, Why: "runtime of " + filepath.Base(exe)})
		}
	}
	if in.SelfExe != "" {
		for _, p := range []string{in.SelfExe, realPath(fs, in.SelfExe)} {
			if !IsSystem(p) {
				add(Mount{Path: p, Why: "the kandev binary"})
			}
		}
	}
	add(Mount{Path: in.Worktree, RW: true, Why: "worktree"})
	if in.Git != nil {
		for _, m := range in.Git.mounts(fs, in.Worktree) {
			add(m)
		}
	}
	for _, p := range in.ReadOnly {
		if fs.Exists(p) {
			add(Mount{Path: p, Why: "the repository's own, read-only"})
		}
	}
	if in.MCPSocket != "" {
		add(Mount{Path: in.MCPSocket, RW: true, Why: "mcp.sock"})
	}
	if len(in.Forwards) > 0 {
		if in.ForwardDir == "" || in.SelfExe == "" || in.SessionID == "" {
			return View{}, fmt.Errorf("sandbox: forwarded ports need the kandev binary, a session and a socket directory")
		}
		v.Forwarder = in.SelfExe
		for _, port := range in.Forwards {
			f := Forward{Port: port, Socket: forwardSocket(in.ForwardDir, in.SessionID, port)}
			v.Forwards = append(v.Forwards, f)
			if v.ownLoopback() {
				add(Mount{Path: f.Socket, RW: true, Why: "forward of port " + strconv.Itoa(port)})
			}
		}
	}
	v.Mounts = normalize(v.Mounts)
	return v, nil
}

func expandHome(p, home string) string {
	if p == "~" {
		return home
	}
	if strings.HasPrefix(p, "~/") && home != "" {
		return filepath.Join(home, p[2:])
	}
	return filepath.Clean(p)
}

// normalize drops a mount a read-only parent already gives with the same
// access and orders parents before children (a child mounted first would
// be hidden by its parent), keeping the given order among equals.
func normalize(ms []Mount) []Mount {
	seen := map[string]int{}
	var out []Mount
	for _, m := range ms {
		m.Path = filepath.Clean(m.Path)
		if i, ok := seen[m.Path]; ok {
			// The later rule wins, but never widens a read-only .git part.
			out[i] = m
			continue
		}
		if !m.Tmpfs && m.Src == "" && !m.RW && coveredRO(out, m.Path) {
			continue
		}
		seen[m.Path] = len(out)
		out = append(out, m)
	}
	sort.SliceStable(out, func(i, j int) bool { return depth(out[i].Path) < depth(out[j].Path) })
	return out
}

// coveredRO reports whether the nearest mount holding p is a plain
// read-only bind, which already gives p read-only.
func coveredRO(ms []Mount, p string) bool {
	best := -1
	for i, m := range ms {
		if (p == m.Path || strings.HasPrefix(p, m.Path+"/")) && (best < 0 || depth(m.Path) >= depth(ms[best].Path)) {
			best = i
		}
	}
	return best >= 0 && !ms[best].Tmpfs && ms[best].Src == "" && !ms[best].RW
}

func depth(p string) int { return strings.Count(p, "/") }

// runtimeDirs is what an executable needs to run: the directory it was
// found in (its install prefix when that is a bin directory), the same for
// the file a symlink leads to, and for its #! interpreter. System
// directories are mounted anyway and are left out. A prefix that is the
// operator's home, holds it, or is the home's shared ~/.local gives only
// its bin and library directories: an agent in ~/bin must not see ~/.ssh.
func runtimeDirs(fs FS, exe, home string) []string {
	var out []string
	seen := map[string]bool{}
	var visit func(p string, depth int)
	visit = func(p string, depth int) {
		if depth > 3 || p == "" {
			return
		}
		for _, c := range []string{p, realPath(fs, p)} {
			ds := prefixDirs(fs, filepath.Dir(c), home)
			if len(ds) == 0 {
				// Found in a shared directory: the file alone.
				ds = []string{c}
			}
			for _, d := range append(ds, moduleTree(c)) {
				if d != "" && !IsSystem(d) && !seen[d] && d != "/" {
					seen[d] = true
					out = append(out, d)
				}
			}
		}
		for _, interp := range runsWith(fs, realPath(fs, p)) {
			visit(interp, depth+1)
		}
	}
	visit(exe, 0)
	return out
}

// prefixDirs are the directories of dir's install prefix a runtime gets:
// the prefix itself, or, where the prefix is shared with everything else
// the operator keeps (the home, a directory above it, ~/.local, a
// temporary directory), only its bin, lib, lib64 and libexec; nothing
// when dir itself is shared (an agent in ~ or /tmp brings only itself,
// never its neighbours: ~/.ssh, other users' files in /tmp, an engine's
// data root).
func prefixDirs(fs FS, dir, home string) []string {
	if sharedDir(dir, home) {
		return nil
	}
	p := prefix(dir)
	if p == dir || !sharedDir(p, home) {
		return []string{p}
	}
	out := []string{dir}
	for _, sub := range []string{"lib", "lib64", "libexec"} {
		if d := filepath.Join(p, sub); fs.Exists(d) {
			out = append(out, d)
		}
	}
	return out
}

// sharedDir reports whether dir holds much besides any install: the home,
// a directory above it, ~/.local, or a temporary directory.
func sharedDir(dir, home string) bool {
	switch filepath.Clean(dir) {
	case "/", "/tmp", "/var/tmp", "/dev/shm":
		return true
	}
	return sharedPrefix(dir, home)
}

func sharedPrefix(p, home string) bool {
	if home == "" {
		return false
	}
	home = filepath.Clean(home)
	return p == home || p == "/" || strings.HasPrefix(home, p+"/") || p == filepath.Join(home, ".local")
}

// Runtime is what an executable needs to run anywhere, for an image
// that has nothing else (kandev image build): the files on its way (the
// command, what its symlinks lead to, its #! interpreters, found as
// runtimeDirs finds them) and the directories it runs from: the whole
// node_modules tree it lies in, and its install prefix unless that is a
// system directory (whose other files it does not need; the libraries it
// links are the caller's to add).
func Runtime(fs FS, exe, home string) (files, dirs []string) {
	seen := map[string]bool{}
	var visit func(p string, depth int)
	visit = func(p string, depth int) {
		if depth > 3 || p == "" {
			return
		}
		for _, c := range []string{p, realPath(fs, p)} {
			files = append(files, c)
			ds := []string{moduleTree(c)}
			for _, d := range prefixDirs(fs, filepath.Dir(c), home) {
				if !IsSystem(d) {
					ds = append(ds, d)
				}
			}
			for _, d := range ds {
				if d != "" && d != "/" && !seen[d] {
					seen[d] = true
					dirs = append(dirs, d)
				}
			}
		}
		for _, interp := range runsWith(fs, realPath(fs, p)) {
			visit(interp, depth+1)
		}
	}
	visit(exe, 0)
	return files, dirs
}

// Interpreters are the programs exe's #! lines name, in order (a script's
// node, a shell shim's sh), as found here: for `#!/usr/bin/env NAME` the
// NAME on PATH, which an image's PATH must find again.
func Interpreters(fs FS, exe string) []string {
	var out []string
	var visit func(p string, depth int)
	visit = func(p string, depth int) {
		if depth > 3 {
			return
		}
		for _, interp := range runsWith(fs, realPath(fs, p)) {
			out = append(out, interp)
			visit(interp, depth+1)
		}
	}
	visit(exe, 0)
	return out
}

// runsWith are the programs a script runs with: its #! interpreter and,
// for a shell shim (pnpm's and npm's cmd-shim, `exec node "$basedir/…"`),
// the program it execs.
func runsWith(fs FS, path string) []string {
	interp := shebang(fs, path)
	if interp == "" {
		return nil
	}
	out := []string{interp}
	switch filepath.Base(interp) {
	case "sh", "bash", "dash":
		if p := shimExec(fs, path); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// shimExecRE is an exec line of a shim: the program, bare or beside the
// shim ($basedir/NAME), then its arguments.
var shimExecRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\s*exec\s+"?(\$basedir/)?([A-Za-z0-9_.+-]+)"?\s`)
})

// shimExec is the program a shell shim execs, found as the shim finds it:
// beside the shim first, else on PATH. Only small scripts are read: a
// shim is a few lines, and the agent's own shell scripts are not guessed
// at beyond their first exec.
func shimExec(fs FS, path string) string {
	b, err := fs.ReadFile(path)
	if err != nil || len(b) > 16<<10 {
		return ""
	}
	for _, m := range shimExecRE().FindAllSubmatch(b, -1) {
		name := string(m[2])
		if len(m[1]) > 0 {
			if p := filepath.Join(filepath.Dir(path), name); fs.Exists(p) {
				return p
			}
			continue
		}
		if p, err := fs.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func realPath(fs FS, p string) string {
	if r, err := fs.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// prefix is an install prefix: the parent of a bin directory (node's
// lib/node_modules sits beside its bin), else the directory itself.
func prefix(dir string) string {
	if filepath.Base(dir) == "bin" {
		return filepath.Dir(dir)
	}
	return dir
}

// moduleTree is the outermost node_modules directory path lies in, or "":
// node resolves a package's requires up through every node_modules above
// it, so a local install (<project>/node_modules/.bin/agent, a link into
// a package beside the ones it requires) or pnpm's store under
// node_modules/.pnpm runs only with the whole tree. Outside node_modules
// the install prefix (bin's parent) holds a global install's.
func moduleTree(path string) string {
	out := ""
	for dir := filepath.Dir(path); dir != "/" && dir != "."; dir = filepath.Dir(dir) {
		if filepath.Base(dir) == "node_modules" {
			out = dir
		}
	}
	return out
}

// shebang returns the interpreter a script names, found on PATH for
// "#!/usr/bin/env NAME".
func shebang(fs FS, path string) string {
	line := fs.FirstLine(path)
	if !strings.HasPrefix(line, "#!") {
		return ""
	}
	fields := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(fields) == 0 {
		return ""
	}
	if filepath.Base(fields[0]) == "env" {
		for _, f := range fields[1:] {
			if strings.HasPrefix(f, "-") || strings.Contains(f, "=") {
				continue
			}
			if p, err := fs.LookPath(f); err == nil {
				return p
			}
			return ""
		}
		return ""
	}
	return fields[0]
}
