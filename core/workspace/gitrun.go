package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// One trust boundary (ADR 0065, docs/security.md): every git command
// kandev runs on this machine goes through Runner, and nothing a
// repository, a worktree or the environment says makes git run a program.
//
// What git may read is decided here, as an allow-list of what kandev
// needs:
//   - the environment is built, not inherited: the names in allowEnv and
//     the entries Runner sets itself, never the daemon's GIT_* (a
//     GIT_EXTERNAL_DIFF, GIT_SSH_COMMAND, GIT_CONFIG_PARAMETERS or GIT_DIR
//     of whoever started the daemon), PAGER, EDITOR or the like;
//   - configuration: no system file, no global file (the operator's
//     identity, user.name and user.email, is the one thing taken from it,
//     passed on the command line); the repository's own config, which no
//     confined agent can write (its worktree's administrative directory and
//     objects are private, ADR 0065), is read, and every key under which it
//     could name a program is fixed on the command line (fixedConfig), and
//     every filter and merge or diff driver it defines is emptied
//     (neutralDrivers), so attributes in a tree the agent wrote select
//     nothing that runs;
//   - porcelain diffs get --no-ext-diff --no-textconv.
// A push to the operator's remote (Remote) keeps the operator's global and
// system configuration and ssh agent: credentials, url rewrites and the
// ssh command are the operator's, and hooks stay off.

// allowEnv are the names of the daemon's environment git is given.
var allowEnv = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "TMPDIR": true, "TZ": true,
	"GIT_AUTHOR_NAME": true, "GIT_AUTHOR_EMAIL": true, "GIT_AUTHOR_DATE": true,
	"GIT_COMMITTER_NAME": true, "GIT_COMMITTER_EMAIL": true, "GIT_COMMITTER_DATE": true,
}

// remoteEnv are the names a push or fetch to the operator's own remote
// also needs: its ssh agent, its proxies and where its global config is.
var remoteEnv = map[string]bool{
	"SSH_AUTH_SOCK": true, "XDG_CONFIG_HOME": true,
	"http_proxy": true, "https_proxy": true, "no_proxy": true, "all_proxy": true,
	"HTTP_PROXY": true, "HTTPS_PROXY": true, "NO_PROXY": true, "ALL_PROXY": true,
}

// fixedConfig is given on the command line, where it beats every config
// file: each key under which git runs a program, or follows a pointer into
// another repository's configuration, set to nothing that runs.
var fixedConfig = []string{
	"core.hooksPath=/dev/null",
	"core.fsmonitor=false",
	"core.pager=cat",
	"core.editor=:",
	"sequence.editor=:",
	"core.askPass=",
	"core.attributesFile=/dev/null",
	"core.alternateRefsCommand=true",
	"credential.helper=",
	"gpg.program=false",
	"gpg.openpgp.program=false",
	"gpg.x509.program=false",
	"gpg.ssh.program=false",
	"gpg.ssh.defaultKeyCommand=false",
	"commit.gpgSign=false",
	"tag.gpgSign=false",
	"push.gpgSign=false",
	"merge.verifySignatures=false",
	"log.showSignature=false",
	"merge.stat=false",
	"submodule.recurse=false",
	"diff.ignoreSubmodules=all",
	"status.submoduleSummary=false",
	"fetch.recurseSubmodules=false",
	"push.recurseSubmodules=no",
	"protocol.ext.allow=never",
	"safe.bareRepository=explicit",
	"gc.auto=0",
	"maintenance.auto=false",
	"transfer.fsckObjects=true",
	"fetch.fsckObjects=true",
	"receive.fsckObjects=true",
	"core.sshCommand=false",
	"core.gitProxy=false",
}

// remoteFixedConfig is fixedConfig for a push to the operator's remote:
// its credential helper, ssh command and proxy are the operator's.
var remoteFixedConfig = func() []string {
	var out []string
	for _, kv := range fixedConfig {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "credential.helper", "core.sshCommand", "core.gitProxy", "core.askPass":
		default:
			out = append(out, kv)
		}
	}
	return out
}()

// Runner runs git. Its zero value works; a Manager keeps one so that the
// repository's drivers and the operator's identity are looked up once.
type Runner struct {
	mu       sync.Mutex
	identity []string // -c user.name=… -c user.email=…, once read
	idRead   bool
	drivers  map[string]driverCache
}

type driverCache struct {
	key   string
	flags []string
	has   map[string]bool
}

// GitCall is one git command.
type GitCall struct {
	Dir   string
	Env   []string // KEY=VALUE set by kandev itself (GIT_DIR, GIT_INDEX_FILE, …)
	Stdin io.Reader
	// Remote: a push or fetch to the operator's own remote (see above).
	Remote  bool
	Timeout time.Duration
	Args    []string
}

// Run runs one git command and returns its stdout.
func (r *Runner) Run(ctx context.Context, c GitCall) (string, error) {
	var stdout bytes.Buffer
	err := r.Stream(ctx, c, &stdout)
	return stdout.String(), err
}

// Stream is Run writing git's stdout to w.
func (r *Runner) Stream(ctx context.Context, c GitCall, w io.Writer) error {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	path, err := exec.LookPath("git")
	if err != nil {
		return ErrNoGit
	}
	env := r.env(c)
	args := r.args(ctx, path, c, env)
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = c.Dir
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdin = c.Stdin
	var stderr bytes.Buffer
	cmd.Stdout = w
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (after %s)", ctx.Err(), timeout)
		}
		return &GitError{Args: c.Args, Stderr: stderr.String(), Err: err}
	}
	return nil
}

// env is the command's whole environment.
func (r *Runner) env(c GitCall) []string {
	env := make([]string, 0, 24)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if allowEnv[k] || (c.Remote && remoteEnv[k]) {
			env = append(env, kv)
		}
	}
	env = append(env,
		"LC_ALL=C",
		// Never wait on a prompt: kandev runs git without a terminal.
		"GIT_TERMINAL_PROMPT=0",
		"GIT_PAGER=cat", "PAGER=cat", "GIT_EDITOR=:",
		// Replace refs make git show one object for another: history
		// nobody reviewed.
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_PROTOCOL_FROM_USER=0",
	)
	if c.Remote {
		env = append(env, "GIT_ALLOW_PROTOCOL=file:git:ssh:http:https")
	} else {
		env = append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_ALLOW_PROTOCOL=file")
	}
	return append(env, c.Env...)
}

// args are c.Args behind the fixed configuration, the operator's
// identity and the repository's emptied drivers.
func (r *Runner) args(ctx context.Context, git string, c GitCall, env []string) []string {
	fixed := fixedConfig
	if c.Remote {
		fixed = remoteFixedConfig
	}
	var pre []string
	for _, kv := range fixed {
		pre = append(pre, "-c", kv)
	}
	if len(c.Args) > 0 && c.Args[0] != "version" {
		rc := r.repoConfig(ctx, git, c, env)
		pre = append(pre, rc.flags...)
		if !c.Remote {
			pre = append(pre, r.identityFlags(ctx, git, rc.has)...)
		}
	}
	args := append(pre, c.Args...)
	if len(c.Args) > 0 && (c.Args[0] == "diff" || c.Args[0] == "log" || c.Args[0] == "show") {
		// Porcelain diffs would run an external diff or a textconv.
		i := len(pre) + 1
		args = append(append(append([]string(nil), args[:i]...), "--no-ext-diff", "--no-textconv"), args[i:]...)
	}
	return args
}

// identityFlags are the operator's user.name and user.email from their
// own global (and system) configuration, the only keys of it local git
// commands see (a merge or a commit of pending work is the operator's),
// except those the repository's own configuration sets (has), which win
// as they would in the operator's git.
func (r *Runner) identityFlags(ctx context.Context, git string, has map[string]bool) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.idRead {
		r.idRead = true
		r.identity = readIdentity(ctx, git)
	}
	var out []string
	for i := 0; i+1 < len(r.identity); i += 2 {
		if k, _, _ := strings.Cut(r.identity[i+1], "="); !has[k] {
			out = append(out, r.identity[i], r.identity[i+1])
		}
	}
	return out
}

// readIdentity reads user.name and user.email of the operator's own
// configuration files, as -c flags.
func readIdentity(ctx context.Context, git string) []string {
	var flags []string
	env := []string{"LC_ALL=C", "GIT_TERMINAL_PROMPT=0"}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k == "HOME" || k == "XDG_CONFIG_HOME" || k == "PATH" {
			env = append(env, kv)
		}
	}
	for _, key := range []string{"user.name", "user.email"} {
		// Outside any repository (cwd /), so only the operator's files
		// are read; git config runs no program.
		cmd := exec.CommandContext(ctx, git, "config", "--get", key)
		cmd.Dir = "/"
		cmd.Env = append(env, "GIT_DIR=/nonexistent-kandev")
		if out, err := cmd.Output(); err == nil {
			if v := strings.TrimSpace(string(out)); v != "" {
				flags = append(flags, "-c", key+"="+v)
			}
		}
	}
	return flags
}

// repoConfig is what the configuration git will read for c holds that
// the runner must answer: every filter and diff or merge driver it
// defines, emptied (an attribute in a tree an agent wrote may name one,
// and it would run over the agent's files here; a merge driver becomes
// `false`, so the merge conflicts and kandev refuses it, never "", which
// git would run as a merge that keeps our side), and which identity keys
// it sets. It is looked up with one `git config --list` (which runs no
// program) and kept while the config files are unchanged.
func (r *Runner) repoConfig(ctx context.Context, git string, c GitCall, env []string) driverCache {
	key, cacheable := configKey(c, env)
	if cacheable {
		r.mu.Lock()
		d, ok := r.drivers[c.Dir]
		r.mu.Unlock()
		if ok && d.key == key {
			return d
		}
	}
	cmd := exec.CommandContext(ctx, git, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "config", "--list", "--name-only", "-z")
	cmd.Dir = c.Dir
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return driverCache{} // no repository here: nothing can select a driver
	}
	d, includes := neutralDrivers(string(out))
	d.key = key
	if cacheable && !includes {
		r.mu.Lock()
		if r.drivers == nil {
			r.drivers = map[string]driverCache{}
		}
		r.drivers[c.Dir] = d
		r.mu.Unlock()
	}
	return d
}

// neutralDrivers reads `git config --list --name-only -z` into the flags
// that empty every driver it defines and the identity keys it sets, and
// says whether the configuration includes other files (then it is not
// kept: they can change unseen).
func neutralDrivers(list string) (d driverCache, includes bool) {
	seen := map[string]bool{}
	d.has = map[string]bool{}
	for _, name := range strings.Split(list, "\x00") {
		name = strings.ToLower(strings.TrimSpace(name))
		if strings.HasPrefix(name, "include.") || strings.HasPrefix(name, "includeif.") {
			includes = true
		}
		if name == "user.name" || name == "user.email" {
			d.has[name] = true
		}
		section, rest, ok := strings.Cut(name, ".")
		if !ok {
			continue
		}
		i := strings.LastIndexByte(rest, '.')
		if i <= 0 {
			continue
		}
		sub, key := rest[:i], rest[i+1:]
		var set []string
		switch {
		case section == "filter" && (key == "clean" || key == "smudge" || key == "process" || key == "required"):
			set = []string{"filter." + sub + ".clean=", "filter." + sub + ".smudge=", "filter." + sub + ".process=", "filter." + sub + ".required=false"}
		case section == "diff" && (key == "textconv" || key == "command"):
			set = []string{"diff." + sub + ".textconv=false", "diff." + sub + ".command=false", "diff." + sub + ".cachetextconv=false"}
		case section == "merge" && (key == "driver" || key == "recursive"):
			set = []string{"merge." + sub + ".driver=false", "merge." + sub + ".recursive=binary"}
		}
		if len(set) == 0 || seen[section+"."+sub] {
			continue
		}
		seen[section+"."+sub] = true
		for _, kv := range set {
			d.flags = append(d.flags, "-c", kv)
		}
	}
	return d, includes
}

// configKey names the configuration files git reads for c (the common
// directory's config and the worktree's config.worktree) by size and
// modification time; false when they cannot be told.
func configKey(c GitCall, env []string) (string, bool) {
	var gitDir, common string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GIT_DIR="); ok {
			gitDir = v
		} else if v, ok := strings.CutPrefix(kv, "GIT_COMMON_DIR="); ok {
			common = v
		}
	}
	if gitDir == "" {
		gitDir = filepath.Join(c.Dir, ".git")
	}
	if common == "" {
		common = gitDir
	}
	var b strings.Builder
	for _, p := range []string{filepath.Join(common, "config"), filepath.Join(gitDir, "config.worktree")} {
		fi, err := os.Stat(p)
		switch {
		case errors.Is(err, os.ErrNotExist):
			b.WriteString("-;")
		case err != nil || !fi.Mode().IsRegular():
			return "", false
		default:
			fmt.Fprintf(&b, "%s:%d:%d;", p, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return b.String(), true
}

// Git runs one git command through a Runner of its own: for the packages
// that run git seldom (a host's fetch-back, the demo's repository).
func Git(ctx context.Context, c GitCall) (string, error) {
	var r Runner
	return r.Run(ctx, c)
}

// ShellPrelude is the runner for the sh scripts kandev runs on a host
// over ssh: it unsets the account's GIT_* environment but for identity,
// sets the runner's own, and makes `git` in the script a function that
// puts fixedConfig before every command. The host's repositories are
// kandev's (a bare repository it made), whose config the host's confined
// agents cannot write, so no driver lookup is needed there.
func ShellPrelude() string {
	var b strings.Builder
	b.WriteString("for v in $(env | sed -n 's/^\\(GIT_[A-Za-z0-9_]*\\)=.*/\\1/p'); do case $v in GIT_AUTHOR_*|GIT_COMMITTER_*) ;; *) unset \"$v\";; esac; done\n")
	b.WriteString("unset PAGER EDITOR VISUAL\n")
	b.WriteString("export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0 GIT_PAGER=cat PAGER=cat GIT_EDITOR=: GIT_NO_REPLACE_OBJECTS=1 GIT_ATTR_NOSYSTEM=1 GIT_PROTOCOL_FROM_USER=0 GIT_ALLOW_PROTOCOL=file\n")
	b.WriteString("git() { command git")
	for _, kv := range fixedConfig {
		b.WriteString(" -c '" + kv + "'")
	}
	b.WriteString(" \"$@\"; }\n")
	return b.String()
}
