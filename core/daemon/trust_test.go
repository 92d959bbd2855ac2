package daemon_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// One trust boundary (issue 34, ADR 0065): a confined agent (a task with
// sandbox bwrap or docker) is untrusted, and so is every byte it writes.
// The host (kandev's daemon, and the operator's own git in the main
// checkout) must never run, or trust, anything a confined agent wrote.
//
// Every test here runs the real binary with the bundled mock agent, whose
// `mock: sh` plants what a hostile agent would, for each sandbox mode. A
// planted command touches a marker file in a directory outside every
// sandbox (markers/ under the test's root, which no sandbox mounts): a
// marker on the host is a command of the agent's that ran there. Inside a
// sandbox the same path does not exist, so a planted command that runs
// confined (a setup script, the agent's own git) is harmless and leaves
// nothing on the host.
//
// TestTrustSetupFromAgentBranch, TestTrustAgentGitConfig and
// TestTrustRewrittenHistory are the three breaks the issue reports.
// TestTrustMatrix is the attack matrix: plantable × host operation.

// trustModes are the sandbox modes the trust tests run under, each a
// subtest. docker rows run where a docker daemon answers (startEngine).
var trustModes = []string{core.SandboxBwrap, core.SandboxDocker}

// trustWait is how long a planting turn, or an operation, may take: the
// huge files and eight containers at once on two cores are slow.
const trustWait = 3 * time.Minute

// trustEnv is an operator (a home with a secret no agent may read), a
// directory of markers outside every sandbox, and a daemon whose confined
// agents are allowed their tools.
type trustEnv struct {
	mode       string
	d          *daemontest.Daemon
	root       string
	home       string
	secret     string // the operator's 0600 key, in a home no agent sees
	secretText string
	markers    string
	profile    string // the confined profile ("" for bwrap: the built-in mock)
	ghLog      string // what the fake gh was asked
	nonce      string
	repos      int
}

func newTrustEnv(t *testing.T, mode string) *trustEnv {
	t.Helper()
	if mode == core.SandboxBwrap {
		needBwrap(t)
	}
	root, err := os.MkdirTemp("", "kdtrust-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if root, err = filepath.EvalSymlinks(root); err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, 6)
	_, _ = rand.Read(nonce)
	e := &trustEnv{mode: mode, root: root, home: filepath.Join(root, "home"), markers: filepath.Join(root, "markers"),
		ghLog: filepath.Join(root, "gh.log"), nonce: hex.EncodeToString(nonce)}
	e.secret = filepath.Join(e.home, ".ssh", "id_ed25519")
	e.secretText = "operator's key " + e.nonce
	bin := filepath.Join(root, "bin")
	for _, dir := range []string{filepath.Dir(e.secret), e.markers, bin} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(e.markers, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.secret, []byte(e.secretText+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// gh for `task pr`: it records what it was asked and answers as a
	// logged-in gh that opened a pull request would.
	gh := "#!/bin/sh\nprintf '%s\\n' \"$*\" >> " + e.ghLog + "\ncase \"$1\" in pr) echo https://github.com/kandev/trust/pull/1 ;; esac\nexit 0\n"
	if err := os.WriteFile(filepath.Join(bin, "gh"), []byte(gh), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + e.home, "KANDEV_PERMISSION=allow", "PATH=" + bin + ":" + os.Getenv("PATH"),
		"GIT_AUTHOR_NAME=op", "GIT_AUTHOR_EMAIL=op@example.com", "GIT_COMMITTER_NAME=op", "GIT_COMMITTER_EMAIL=op@example.com"}
	switch mode {
	case core.SandboxBwrap:
		e.d = daemontest.Start(t, daemontest.WithEnv(env...))
	case core.SandboxDocker:
		eng := startEngine(t, core.SandboxDocker, false)
		kandev := daemontest.Binary(t)
		image := trustImage(t, eng, kandev)
		e.d = daemontest.Start(t, daemontest.WithEnv(append(env, eng.env...)...))
		leaveNoContainer(t, eng)
		// Cleanups run last first: the daemon stops (its agents' containers
		// with it) before leaveNoContainer looks.
		t.Cleanup(e.d.Stop)
		e.d.MustRun("profile", "add", "boxed", "--command", kandev, "--arg", "mock-agent", "--sandbox", eng.name,
			"--image", image, "--no-network")
		e.profile = "boxed"
	default:
		t.Fatalf("no trust environment for sandbox %q", mode)
	}
	return e
}

// git runs the operator's git (their home, no terminal), bounded.
func (e *trustEnv) git(dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), trustWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+e.home, "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "PAGER=cat",
		"GIT_AUTHOR_NAME=op", "GIT_AUTHOR_EMAIL=op@example.com", "GIT_COMMITTER_NAME=op", "GIT_COMMITTER_EMAIL=op@example.com")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("git %s did not finish in %s", strings.Join(args, " "), trustWait)
	}
	return string(out), err
}

func (e *trustEnv) mustGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := e.git(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

// cli runs kandev against the daemon, bounded: an operation that hangs
// fails the cell instead of the whole run.
func (e *trustEnv) cli(args ...string) (string, int) {
	ctx, cancel := context.WithTimeout(context.Background(), trustWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.d.Bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KANDEV_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, e.d.Env...)
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return string(out) + fmt.Sprintf("\n(kandev %s did not finish in %s)", strings.Join(args, " "), trustWait), -1
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		return err.Error(), -1
	}
	return string(out), code
}

// ctx bounds one client call.
func trustCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), trustWait)
}

// takeMarkers lists the markers planted commands left on the host, and
// removes them, so the next cell tells its own.
func (e *trustEnv) takeMarkers(t *testing.T) []string {
	t.Helper()
	var names []string
	_ = filepath.WalkDir(e.markers, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == e.markers {
			return nil
		}
		rel, _ := filepath.Rel(e.markers, p)
		names = append(names, rel)
		return nil
	})
	ents, _ := os.ReadDir(e.markers)
	for _, ent := range ents {
		_ = os.RemoveAll(filepath.Join(e.markers, ent.Name()))
	}
	sort.Strings(names)
	return names
}

// box creates a confined task in dir (a repository: its own worktree).
func (e *trustEnv) box(t *testing.T, dir, title, prompt string, start bool) core.Task {
	t.Helper()
	return create(t, e.d, api.CreateTaskInput{Title: title, CWD: dir, Sandbox: e.mode, Profile: e.profile, Start: start, Prompt: prompt})
}

// trustRepo is an operator's repository: its tracked files, its ignored
// ones (.worktreeinclude copies some, not .private), a bare origin, and
// what the operator expects of it.
type trustRepo struct {
	dir, origin string
	files       map[string]string // tracked on main, the operator's
	ignored     map[string]string // untracked in the main checkout, the operator's
	private     string            // .private's text: no agent may ever see it
	main        string            // main as it must be
	tip         string            // the operator's own last commit on main
	revs        string            // the history of tip
	originMain  string
	// reviewed are the files a merge the operator asked for brought, as
	// the task's diff showed them: the original content of those may go.
	reviewed map[string]bool
}

var trustFiles = map[string]string{
	"f.txt": "one\n", "g.txt": "two\n", "h.txt": "three\n", "i.txt": "four\n", "j.txt": "five\n",
	"m.txt":            "line1\nline2\nline3\n",
	".gitignore":       ".env\nconf/\n.private\n",
	".worktreeinclude": ".env\nconf/local.env\n",
}

func (e *trustEnv) newRepo(t *testing.T, worktreeConfig bool) *trustRepo {
	t.Helper()
	e.repos++
	r := &trustRepo{dir: filepath.Join(e.root, fmt.Sprintf("repo%d", e.repos)), origin: filepath.Join(e.root, fmt.Sprintf("origin%d.git", e.repos)),
		files: map[string]string{}, reviewed: map[string]bool{}, private: "PRIVATE=" + e.nonce + "-not-included"}
	r.ignored = map[string]string{".env": "OPERATOR_ENV=included\n", "conf/local.env": "LOCAL=included\n", ".private": r.private + "\n"}
	for p, s := range trustFiles {
		r.files[p] = s
	}
	write := func(files map[string]string) {
		for p, s := range files {
			full := filepath.Join(r.dir, p)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(r.files)
	write(r.ignored)
	e.mustGit(t, r.dir, "init", "-q", "-b", "main")
	e.mustGit(t, r.dir, "add", ".")
	e.mustGit(t, r.dir, "commit", "-q", "-m", "the operator's work")
	e.mustGit(t, e.root, "init", "-q", "--bare", r.origin)
	e.mustGit(t, r.dir, "remote", "add", "origin", r.origin)
	e.mustGit(t, r.dir, "push", "-q", "origin", "main")
	if worktreeConfig {
		// As git sparse-checkout init sets it.
		e.mustGit(t, r.dir, "config", "extensions.worktreeConfig", "true")
	}
	r.main = e.mustGit(t, r.dir, "rev-parse", "main")
	r.tip, r.revs = r.main, e.mustGit(t, r.dir, "rev-list", "main")
	r.originMain = r.main
	return r
}

// commit is the operator committing on main.
func (e *trustEnv) commit(t *testing.T, r *trustRepo, path, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, path), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	e.mustGit(t, r.dir, "commit", "-q", "-am", "the operator changes "+path)
	r.files[path] = text
	r.main = e.mustGit(t, r.dir, "rev-parse", "main")
	r.tip, r.revs = r.main, e.mustGit(t, r.dir, "rev-list", "main")
}

// oid is the object name of main's path.
func (e *trustEnv) oid(t *testing.T, r *trustRepo, path string) string {
	t.Helper()
	return e.mustGit(t, r.dir, "rev-parse", "main:"+path)
}

// truth lists how the operator's repository no longer reads as the
// operator made it: main moved, its history or files changed, an object
// does not check, a clone reads other content, the checkout changed, the
// origin changed.
func (e *trustEnv) truth(t *testing.T, r *trustRepo) []string {
	t.Helper()
	var bad []string
	// The operator's own git in the checkout first: it must run nothing.
	if st, err := e.git(r.dir, "status", "--porcelain"); err != nil || strings.TrimSpace(st) != "" {
		bad = append(bad, fmt.Sprintf("the main checkout is not as the operator left it (git status: %v):\n%s", err, st))
	}
	if got, _ := e.git(r.dir, "rev-parse", "main"); strings.TrimSpace(got) != r.main {
		bad = append(bad, fmt.Sprintf("main is %s, want %s", strings.TrimSpace(got), r.main))
	}
	if got, _ := e.git(r.dir, "rev-list", r.tip); strings.TrimSpace(got) != r.revs {
		bad = append(bad, fmt.Sprintf("the history of the operator's commit %s reads otherwise:\n%s\nwant\n%s", short(r.tip), got, r.revs))
	}
	if _, err := e.git(r.dir, "merge-base", "--is-ancestor", r.tip, "main"); err != nil {
		bad = append(bad, fmt.Sprintf("the operator's commit %s is no longer in main's history", short(r.tip)))
	}
	if out, err := e.git(r.dir, "fsck", "--full", "--no-dangling", "--no-progress"); err != nil {
		bad = append(bad, fmt.Sprintf("git fsck of the repository fails (%v):\n%s", err, tail(out, 1500)))
	}
	clone := filepath.Join(e.root, "clone")
	_ = os.RemoveAll(clone)
	defer os.RemoveAll(clone)
	if out, err := e.git(e.root, "clone", "-q", "--no-hardlinks", r.dir, clone); err != nil {
		bad = append(bad, fmt.Sprintf("a fresh clone fails (%v): %s", err, tail(out, 800)))
		clone = ""
	}
	for p, want := range r.files {
		if r.reviewed[p] {
			continue
		}
		if got, err := e.git(r.dir, "show", "main:"+p); err != nil || got != want {
			bad = append(bad, fmt.Sprintf("git show main:%s reads %q (%v), want %q", p, tail(got, 200), err, want))
		}
		if got, err := readRegular(filepath.Join(r.dir, p)); err != nil || got != want {
			bad = append(bad, fmt.Sprintf("the main checkout's %s reads %q (%v), want %q", p, tail(got, 200), err, want))
		}
		if clone != "" {
			if got, err := readRegular(filepath.Join(clone, p)); err != nil || got != want {
				bad = append(bad, fmt.Sprintf("a fresh clone's %s reads %q (%v), want %q", p, tail(got, 200), err, want))
			}
		}
	}
	for p, want := range r.ignored {
		if got, err := readRegular(filepath.Join(r.dir, p)); err != nil || got != want {
			bad = append(bad, fmt.Sprintf("the operator's untracked %s reads %q (%v), want %q", p, tail(got, 200), err, want))
		}
	}
	if got, err := readRegular(e.secret); err != nil || got != e.secretText+"\n" {
		bad = append(bad, fmt.Sprintf("the operator's secret changed: %q %v", got, err))
	}
	if got, _ := e.git(r.origin, "rev-parse", "main"); strings.TrimSpace(got) != r.originMain {
		bad = append(bad, fmt.Sprintf("origin's main is %s, want %s", strings.TrimSpace(got), r.originMain))
	}
	if out, err := e.git(r.origin, "fsck", "--full", "--no-dangling", "--no-progress"); err != nil {
		bad = append(bad, fmt.Sprintf("git fsck of origin fails (%v):\n%s", err, tail(out, 1500)))
	}
	return bad
}

// readRegular reads a regular file, never through a link or a FIFO.
func readRegular(path string) (string, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is a %s, not a regular file", path, fi.Mode().Type())
	}
	b, err := os.ReadFile(path)
	return string(b), err
}

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// leaks lists where the operator's secret or .private's text shows: in
// what an operation showed (outs), the daemon's log, the session logs,
// the conversations of the given tasks and the files of their worktrees
// (a confined agent reads those), and what gh was asked.
func (e *trustEnv) leaks(t *testing.T, r *trustRepo, tasks []string, outs []string) []string {
	t.Helper()
	secrets := []string{e.secretText}
	if r != nil {
		secrets = append(secrets, r.private)
	}
	var bad []string
	look := func(where, text string) {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				bad = append(bad, fmt.Sprintf("%q shows in %s", s, where))
			}
		}
	}
	for i, o := range outs {
		look(fmt.Sprintf("what the operation showed (%d)", i), o)
	}
	look("the daemon's log", e.d.Log())
	if b, err := os.ReadFile(e.ghLog); err == nil {
		look("what gh was asked", string(b))
	}
	logs, _ := os.ReadDir(e.d.Home.LogDir())
	for _, l := range logs {
		if b, err := readBounded(filepath.Join(e.d.Home.LogDir(), l.Name()), 8<<20); err == nil {
			look("session log "+l.Name(), b)
		}
	}
	for _, id := range tasks {
		task, err := e.d.Client.GetTask(context.Background(), id)
		if err != nil {
			continue
		}
		for _, m := range e.d.Conversation(t, id) {
			look("task "+id+"'s conversation", m.Text)
		}
		if w := task.Workspace; w != nil && w.Dir != "" && w.Mode != core.WorkspaceShared {
			_ = filepath.WalkDir(w.Dir, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return nil
				}
				if d.IsDir() && d.Name() == ".git" {
					return filepath.SkipDir
				}
				if b, err := readBounded(p, 4<<20); err == nil {
					look("task "+id+"'s worktree file "+p, b)
				}
				return nil
			})
		}
	}
	return bad
}

// readBounded reads a regular file of at most max bytes.
func readBounded(path string, max int64) (string, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() || fi.Size() > max {
		return "", fmt.Errorf("not read")
	}
	b, err := os.ReadFile(path)
	return string(b), err
}

// heldOrReport is the common end of a cell: no marker, no leak, the
// repository true. It reports every break as one error naming the cell,
// and says whether the cell held. outs are what the operation showed.
func (e *trustEnv) heldOrReport(t *testing.T, r *trustRepo, cell string, tasks []string, outs ...string) bool {
	t.Helper()
	return e.cellHeld(t, r, cell, tasks, nil, outs, nil)
}

// cellHeld is heldOrReport with the breaks the operation itself found
// (bad) and what it printed on the operator's terminal (term: the CLI's
// output, which must carry no escape sequence the agent wrote).
func (e *trustEnv) cellHeld(t *testing.T, r *trustRepo, cell string, tasks, bad, outs, term []string) bool {
	t.Helper()
	if r != nil {
		bad = append(bad, e.truth(t, r)...)
	}
	if m := e.takeMarkers(t); len(m) > 0 {
		bad = append([]string{"ran on the host: " + strings.Join(m, ", ")}, bad...)
	}
	bad = append(bad, e.leaks(t, r, tasks, append(append([]string(nil), outs...), term...))...)
	for i, o := range term {
		if strings.Contains(o, "\x1b]") || strings.Contains(o, "\x1b[2J") {
			bad = append(bad, fmt.Sprintf("a terminal escape the agent wrote reaches the operator's terminal (output %d): %q", i, tail(o, 300)))
		}
	}
	if len(bad) > 0 {
		t.Errorf("%s: %s", cell, strings.Join(bad, "\n\t"))
		return false
	}
	return true
}

// The planting scripts. Each is a prelude (where things are, helpers)
// and a body; it says "plant result:" and, for every plant, ok (written)
// or held (refused inside the sandbox: a read-only file system, say).
// Either way the host must run none of it.

// trustHooks are every hook githooks(5) names.
const trustHooks = "applypatch-msg pre-applypatch post-applypatch pre-commit pre-merge-commit prepare-commit-msg commit-msg " +
	"post-commit pre-rebase post-checkout post-merge pre-push pre-receive update proc-receive post-receive post-update " +
	"reference-transaction push-to-checkout pre-auto-gc post-rewrite sendemail-validate fsmonitor-watchman " +
	"p4-changelist p4-prepare-changelist p4-post-changelist p4-pre-submit post-index-change"

const trustPrelude = `set -u
export GIT_AUTHOR_NAME=agent GIT_AUTHOR_EMAIL=agent@example.com GIT_COMMITTER_NAME=agent GIT_COMMITTER_EMAIL=agent@example.com GIT_TERMINAL_PROMPT=0
WT=$(git rev-parse --show-toplevel)
AD=$(git rev-parse --absolute-git-dir)
CD=$(cd "$(git rev-parse --git-common-dir)" && pwd -P)
OBJ=$CD/objects
POBJ=$(cd "$(git rev-parse --git-path objects)" && pwd -P)
ME=$(git symbolic-ref -q HEAD)
R=
# try NAME CMD...: plant NAME; the result says ok, or held and the last
# thing the sandbox said (a read-only file system, say).
try() { n=$1; shift; if ( "$@" ) >/tmp/kandev-plant-$n.log 2>&1; then R="$R $n:ok"
  else R="$R $n:held($(tail -n 1 /tmp/kandev-plant-$n.log | tr -d '\n' | head -c 90))"; fi; }
# mkx FILE MARKER: an executable that touches the marker.
mkx() { printf '#!/bin/sh\ntouch %s/%s\nexit 0\n' "$M" "$2" > "$1" && chmod +x "$1"; }
hooks() { mkdir -p "$1" || return 1; for h in $HOOKS; do mkx "$1/$h" "$2-$h" || return 1; done; }
fan() { echo "${1%"${1#??}"}/${1#??}"; }
# ngit DIR ARGS: git in another repository, whatever the sandbox set.
ngit() { d=$1; shift; env -u GIT_DIR -u GIT_COMMON_DIR -u GIT_WORK_TREE -u GIT_INDEX_FILE -u GIT_OBJECT_DIRECTORY -u GIT_ALTERNATE_OBJECT_DIRECTORIES git -C "$d" "$@"; }
# subst OID TEXT [STORES]: the loose object OID, in every store, holds TEXT
# instead (a valid object of other content under OID's name).
subst() { oid=$1; text=$2; stores=${3:-"$OBJ $POBJ"}
  [ -d /tmp/kandev-scratch ] || ngit /tmp init -q kandev-scratch || return 1
  e=$(printf "$text" | ngit /tmp/kandev-scratch hash-object -w --stdin) || return 1
  ok=1
  for o in $stores; do
    mkdir -p "$o/${oid%"${oid#??}"}" 2>/dev/null
    chmod u+w "$o/$(fan $oid)" 2>/dev/null
    cp "/tmp/kandev-scratch/.git/objects/$(fan $e)" "$o/$(fan $oid)" && ok=0
  done
  return $ok
}
# cfg FILE KEY VALUE writes a config file as data, from outside every
# repository (a core.worktree planted before would stop git here).
cfg() { ngit /tmp config -f "$@"; }
# drivers FILE PREFIX NAME: filter, diff and merge drivers NAME in FILE.
drivers() { cfg "$1" filter.$3.clean "touch $M/$2-$3-clean; cat" &&
  cfg "$1" filter.$3.smudge "touch $M/$2-$3-smudge; cat" &&
  cfg "$1" filter.$3p.process "touch $M/$2-$3p-process; false" &&
  cfg "$1" filter.$3p.required true &&
  cfg "$1" diff.$3.textconv "touch $M/$2-$3-textconv; cat" &&
  cfg "$1" diff.$3.cachetextconv false &&
  cfg "$1" diff.$3t.textconv "touch $M/$2-$3t-textconv; cat" &&
  cfg "$1" diff.$3.command "touch $M/$2-$3-diff-command; true" &&
  cfg "$1" merge.$3.driver "touch $M/$2-$3-merge-driver; false" &&
  cfg "$1" merge.$3.name "$2 merge driver"; }
# hostile FILE PREFIX DRIVER: every key under which git runs a program
# or follows a pointer (git-config(1)), in FILE, each touching a marker
# named PREFIX-KEY.
hostile() { f=$1; p=$2; b=$AD/bin-$p
  mkdir -p "$b" || return 1
  for s in gpg gpg-openpgp gpg-x509 gpg-ssh askpass extdiff gitproxy smtp; do mkx "$b/$s" "$p-$s" || return 1; done
  hooks "$b/hooks" "$p-hook" || return 1
  ngit "$WT" rev-parse main:f.txt main:g.txt main:h.txt main:i.txt > "$b/skiplist" 2>/dev/null
  drivers "$f" "$p" "$3" || return 1
  while read -r k v; do cfg "$f" "$k" "$v" || return 1; done <<EOF
core.fsmonitor touch $M/$p-fsmonitor; false
core.hooksPath $b/hooks
core.pager touch $M/$p-pager; cat
pager.log touch $M/$p-pager-log; cat
pager.diff touch $M/$p-pager-diff; cat
pager.show touch $M/$p-pager-show; cat
pager.status touch $M/$p-pager-status; cat
pager.branch touch $M/$p-pager-branch; cat
core.editor touch $M/$p-editor; true
sequence.editor touch $M/$p-sequence-editor; true
core.sshCommand touch $M/$p-sshcommand; false
core.askPass $b/askpass
core.gitProxy $b/gitproxy
credential.helper !touch $M/$p-credential-helper; false
gpg.program $b/gpg
gpg.openpgp.program $b/gpg-openpgp
gpg.x509.program $b/gpg-x509
gpg.ssh.program $b/gpg-ssh
gpg.ssh.defaultKeyCommand touch $M/$p-gpg-ssh-defaultkeycommand; false
user.signingKey kandev-trust
commit.gpgSign true
tag.gpgSign true
push.gpgSign true
log.showSignature true
merge.verifySignatures true
diff.external $b/extdiff
alias.st !touch $M/$p-alias-st
alias.co !touch $M/$p-alias-co
alias.lg !touch $M/$p-alias-lg
alias.status !touch $M/$p-alias-status
alias.diff !touch $M/$p-alias-diff
alias.log !touch $M/$p-alias-log
alias.merge !touch $M/$p-alias-merge
alias.push !touch $M/$p-alias-push
protocol.allow always
protocol.ext.allow always
remote.origin.url ext::sh -c touch% $M/$p-ext-url
remote.origin.pushurl ext::sh -c touch% $M/$p-ext-pushurl
remote.origin.receivepack touch $M/$p-receivepack; false
remote.origin.uploadpack touch $M/$p-uploadpack; false
uploadpack.packObjectsHook touch $M/$p-packobjectshook; false
core.alternateRefsCommand touch $M/$p-alternaterefscommand; false
tar.evil.command touch $M/$p-tar-command; cat
tar.tar.gz.command touch $M/$p-tar-gz-command; cat
tar.tgz.command touch $M/$p-tgz-command; cat
submodule.sub.update !touch $M/$p-submodule-update
submodule.sub.url ext::sh -c touch% $M/$p-submodule-url
submodule.recurse true
status.submoduleSummary true
diff.submodule log
push.recurseSubmodules on-demand
fetch.recurseSubmodules yes
trailer.evil.command touch $M/$p-trailer-command
trailer.evil.cmd touch $M/$p-trailer-cmd
trailer.evil.key Evil
trailer.evil.ifMissing add
merge.tool evil
mergetool.evil.cmd touch $M/$p-mergetool
diff.tool evil
difftool.evil.cmd touch $M/$p-difftool
interactive.diffFilter touch $M/$p-interactive-difffilter; cat
sendemail.smtpServer $b/smtp
imap.tunnel touch $M/$p-imap-tunnel
web.browser evil
browser.evil.cmd touch $M/$p-browser
man.viewer evil
man.evil.cmd touch $M/$p-man-viewer
core.sharedRepository 0777
gc.auto 1
gc.autoDetach false
gc.pruneExpire now
gc.reflogExpire now
gc.reflogExpireUnreachable now
maintenance.auto true
transfer.fsckObjects false
fetch.fsckObjects false
receive.fsckObjects false
fsck.skipList $b/skiplist
fetch.fsck.skipList $b/skiplist
receive.fsck.skipList $b/skiplist
safe.directory *
init.templateDir $b
EOF
  cfg "$f" "url.ext::sh -c touch% $M/$p-insteadof% #.insteadOf" "$ORIGIN" &&
  cfg "$f" "url.ext::sh -c touch% $M/$p-pushinsteadof% #.pushInsteadOf" "$ORIGIN" &&
  cfg "$f" core.worktree "$M/$p-core-worktree"; }
# commit_work commits agent.txt (the same in every task) and a file of
# the task's own (so two tasks' merges into main both bring something).
commit_work() { echo "the agent's work" > agent.txt && echo "$KANDEV_TASK_ID" > "work-${KANDEV_TASK_ID:-x}.txt" &&
  git add -A && git commit -qm "the agent's work"; }
pending_work() { echo "pending work" > pending.txt && echo "more of the agent's work" >> agent.txt; }
`

// trustScript is a planting script: the prelude with this environment's
// paths, then body.
func (e *trustEnv) trustScript(r *trustRepo, body string) string {
	origin := ""
	if r != nil {
		origin = r.origin
	}
	return fmt.Sprintf("M=%s\nSECRET=%s\nORIGIN=%s\nHOOKS='%s'\n", e.markers, e.secret, origin, trustHooks) +
		trustPrelude + body + "\necho \"plant result:$R\"\n"
}

// plantPrompt is a turn that runs script with the agent's shell, then
// says it is done.
func plantPrompt(name, script string) string {
	b64 := base64.StdEncoding.EncodeToString([]byte(script))
	return "plant " + name + "\nmock: sh echo " + b64 + " | base64 -d > /tmp/kandev-plant.sh && sh /tmp/kandev-plant.sh\nmock: say planted " + name
}

// waitPlanted waits for the planting turn to be over and returns what the
// agent's shell said.
func (e *trustEnv) waitPlanted(t *testing.T, id, name string) string {
	t.Helper()
	daemontest.Eventually(t, trustWait, "task "+id+" to plant "+name, func() bool { return saidContains(t, e.d, id, "planted "+name) })
	e.settled(t, id)
	var out []string
	for _, s := range said(t, e.d, id) {
		if strings.HasPrefix(s, "sh: ") || strings.HasPrefix(s, "sh exit:") {
			out = append(out, s)
		}
	}
	return strings.Join(out, "\n")
}

// settled waits until no turn of the task runs or waits to run.
func (e *trustEnv) settled(t *testing.T, id string) core.Task {
	t.Helper()
	deadline := time.Now().Add(trustWait)
	for {
		task := get(t, e.d, id)
		if task.Session != nil && task.Queued == 0 {
			switch task.Session.State {
			case core.SessionStarting, core.SessionRunning, core.SessionCreated:
			default:
				return task
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for task %s to settle: queued %d, session %+v", trustWait, id, task.Queued, task.Session)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// say sends the task a turn and waits for it to be over; token is a word
// the turn's last line says.
func (e *trustEnv) say(t *testing.T, id, prompt, token string) string {
	t.Helper()
	message(t, e.d, id, prompt+"\nmock: say "+token)
	daemontest.Eventually(t, trustWait, "task "+id+" to say "+token, func() bool { return saidContains(t, e.d, id, token) })
	e.settled(t, id)
	return strings.Join(said(t, e.d, id), "\n")
}

// children are the tasks under id (not id itself).
func (e *trustEnv) children(t *testing.T, id string) []core.Task {
	t.Helper()
	ctx, cancel := trustCtx()
	defer cancel()
	all, err := e.d.Client.ListTasks(ctx, api.ListTasksInput{Root: id, All: true})
	if err != nil {
		t.Fatalf("list %s's subtree: %v", id, err)
	}
	var out []core.Task
	for _, c := range all {
		if c.ID != id {
			out = append(out, c)
		}
	}
	return out
}

// logOnFailure logs, when the test fails, the task's session and its
// conversation, each entry cut short (a planting prompt is long).
func (e *trustEnv) logOnFailure(t *testing.T, id string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		got, err := e.d.Client.GetTask(context.Background(), id)
		if err != nil {
			return
		}
		t.Logf("task %s: session %+v", id, got.Session)
		for _, m := range e.d.Conversation(t, id) {
			t.Logf("%s %s: %s", id, m.Kind, tail(strings.ReplaceAll(m.Text, "\n", " | "), 600))
		}
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// 1. Setup from the agent's branch. A confined agent commits a
// .kandev/setup on its branch (writing a marker on the host, reading the
// operator's key it cannot see), then creates a child with a new worktree,
// started: the child's worktree starts from that branch, and its setup must
// not run on the host. (Run confined, in the child's own sandbox, it finds
// neither the markers' directory nor the key: that is the fix.)
func TestTrustSetupFromAgentBranch(t *testing.T) {
	for _, mode := range trustModes {
		t.Run(mode, func(t *testing.T) {
			e := newTrustEnv(t, mode)
			r := e.newRepo(t, false)
			script := e.trustScript(r, fmt.Sprintf(`mkdir -p .kandev && cat > .kandev/setup <<'SETUP'
#!/bin/sh
touch %[1]s/setup-ran
cat %[2]s > %[1]s/setup-read-the-key 2>&1
cat %[2]s
echo setup done
SETUP
chmod +x .kandev/setup
try setup-on-branch commit_work
`, e.markers, e.secret))
			prompt := plantPrompt("setup", script) + "\n" +
				call("create_task_kandev", map[string]any{"title": "child of the agent's branch", "workspace": "new", "start": true,
					"prompt": "mock: say child up"}) + "\nmock: say asked for the child"
			parent := e.box(t, r.dir, "plants a setup", prompt, true)
			e.logOnFailure(t, parent.ID)
			daemontest.Eventually(t, trustWait, "the child's creation", func() bool { return saidContains(t, e.d, parent.ID, "asked for the child") })
			out := strings.Join(said(t, e.d, parent.ID), "\n")
			if !strings.Contains(out, "setup-on-branch:ok") {
				t.Fatalf("the agent could not commit its setup:\n%s", out)
			}
			kids := e.children(t, parent.ID)
			if len(kids) != 1 {
				t.Fatalf("the agent's create_task_kandev made %d children:\n%s", len(kids), out)
			}
			child := kids[0]
			e.logOnFailure(t, child.ID)
			if child.Sandbox != mode {
				t.Fatalf("the child's sandbox is %q, want its parent's %s", child.Sandbox, mode)
			}
			got := e.settled(t, child.ID)
			if b, err := os.ReadFile(filepath.Join(got.Workspace.Dir, ".kandev", "setup")); err != nil || !strings.Contains(string(b), "setup-ran") {
				t.Fatalf("the child's worktree does not start from the agent's branch (its setup: %q %v)", b, err)
			}
			e.settled(t, parent.ID)
			if !e.heldOrReport(t, r, "setup from the agent's branch", []string{parent.ID, child.ID}) {
				t.Logf("child: session %+v", got.Session)
			}
		})
	}
}

// 2. Git configuration the agent can write. With extensions.worktreeConfig
// set in the main repository (as git sparse-checkout init does), a
// confined agent writes config.worktree in its worktree's administrative
// directory (every key under which git runs a program) and commits a
// .gitattributes naming its drivers. The operator's diff (with and without
// the patch, through the client and the CLI), merge, and own git status,
// diff and log -p in the main checkout run none of it.
func TestTrustAgentGitConfig(t *testing.T) {
	for _, mode := range trustModes {
		t.Run(mode, func(t *testing.T) {
			e := newTrustEnv(t, mode)
			r := e.newRepo(t, true)
			script := e.trustScript(r, `printf '* filter=x diff=x merge=x\n' > .gitattributes && echo a > a.txt
try commit commit_work
pending_work
echo "changed by the agent" >> a.txt
try config-worktree hostile "$AD/config.worktree" wt x
echo "config.worktree at $AD"
`)
			task := e.box(t, r.dir, "plants git config", plantPrompt("config", script), true)
			e.logOnFailure(t, task.ID)
			out := e.waitPlanted(t, task.ID, "config")
			if !strings.Contains(out, "config-worktree:ok") && !strings.Contains(out, "config-worktree:held") {
				t.Fatalf("the planting script did not run:\n%s", out)
			}
			t.Logf("planted: %s", out)
			ids := []string{task.ID}
			e.heldOrReport(t, r, "after planting", ids)
			ctx, cancel := trustCtx()
			defer cancel()
			d, err := e.d.Client.TaskDiff(ctx, task.ID, api.DiffInput{Patch: true})
			e.heldOrReport(t, r, "kandev task diff (client, patch)", ids, d.Patch, errText(err))
			d, err = e.d.Client.TaskDiff(ctx, task.ID, api.DiffInput{})
			e.heldOrReport(t, r, "kandev task diff (client, files and stat)", ids, d.Stat, errText(err))
			o, _ := e.cli("task", "diff", task.ID)
			e.cellHeld(t, r, "kandev task diff (CLI)", ids, nil, nil, []string{o})
			o, _ = e.cli("task", "diff", "--stat", task.ID)
			e.cellHeld(t, r, "kandev task diff --stat (CLI)", ids, nil, nil, []string{o})
			review, _ := e.d.Client.TaskDiff(ctx, task.ID, api.DiffInput{})
			_, err = e.d.Client.MergeTask(ctx, task.ID, api.MergeInput{})
			var bad []string
			if err == nil {
				bad = e.merged(t, r, review)
			}
			e.cellHeld(t, r, "kandev task merge", ids, bad, []string{errText(err)}, nil)
			var outs []string
			for _, args := range [][]string{{"status"}, {"diff"}, {"diff", "HEAD~1"}, {"log", "-p", "-3"}, {"show"}} {
				o, _ := e.git(r.dir, args...)
				outs = append(outs, o)
			}
			e.heldOrReport(t, r, "the operator's git status, diff, log -p, show", ids, outs...)
		})
	}
}

// merged records a merge the operator asked for: main moved forward from
// where it was (its history kept) and brought only what the task's diff
// showed; those files may differ from the operator's now.
func (e *trustEnv) merged(t *testing.T, r *trustRepo, review api.TaskDiff) []string {
	t.Helper()
	var bad []string
	head := e.mustGit(t, r.dir, "rev-parse", "main")
	if _, err := e.git(r.dir, "merge-base", "--is-ancestor", r.main, head); err != nil {
		bad = append(bad, fmt.Sprintf("the merge made main %s, which does not descend from %s", short(head), short(r.main)))
	}
	shown := map[string]bool{}
	for _, f := range review.Files {
		shown[f.Path] = true
	}
	changed, _ := e.git(r.dir, "diff", "--no-ext-diff", "--no-textconv", "--name-only", "-z", r.main, head)
	for _, p := range strings.Split(strings.TrimRight(changed, "\x00"), "\x00") {
		if p != "" && !shown[p] {
			bad = append(bad, fmt.Sprintf("the merge brought %q, which the task's diff did not show (its files: %v)", p, review.Files))
		}
	}
	for p := range shown {
		r.reviewed[p] = true
	}
	r.main = head
	return bad
}

// 3. The agent rewrites history. The repository's objects are the
// operator's: an agent that overwrites the loose object of a blob on main
// with a valid object of other content changes nothing the operator, a
// clone or the next task reads, and git fsck stays clean. And a commit on
// the agent's branch whose objects do not check is refused by diff, merge
// and push, which change nothing.
func TestTrustRewrittenHistory(t *testing.T) {
	for _, mode := range trustModes {
		t.Run(mode, func(t *testing.T) {
			e := newTrustEnv(t, mode)
			t.Run("main's blob", func(t *testing.T) {
				r := e.newRepo(t, false)
				script := e.trustScript(r, `OID=$(git rev-parse main:f.txt)
echo "main's f.txt is $OID, at $CD/objects/$(fan $OID)"
try substitute-main-blob subst "$OID" "the agent rewrote this\n" "$CD/objects"
`)
				task := e.box(t, r.dir, "rewrites main", plantPrompt("history", script), true)
				e.logOnFailure(t, task.ID)
				out := e.waitPlanted(t, task.ID, "history")
				t.Logf("planted: %s", out)
				e.heldOrReport(t, r, "a blob on main overwritten by the agent", []string{task.ID})
				next := e.box(t, r.dir, "the next task", "", false)
				if got, err := readRegular(filepath.Join(next.Workspace.Dir, "f.txt")); err != nil || got != "one\n" {
					t.Errorf("the next task's worktree reads f.txt %q (%v), want %q", got, err, "one\n")
				}
				ctx, cancel := trustCtx()
				defer cancel()
				d, err := e.d.Client.TaskDiff(ctx, task.ID, api.DiffInput{Patch: true})
				e.heldOrReport(t, r, "the agent's diff after the rewrite", []string{task.ID, next.ID}, d.Patch, errText(err))
			})
			t.Run("a substituted object on the branch", func(t *testing.T) {
				r := e.newRepo(t, false)
				script := e.trustScript(r, `printf "the agent's reviewed text\n" > new.txt
try commit commit_work
N=$(git rev-parse HEAD:new.txt)
try substitute-own-blob subst "$N" "the agent's unreviewed text\n"
`)
				task := e.box(t, r.dir, "corrupts its branch", plantPrompt("corrupt", script), true)
				e.logOnFailure(t, task.ID)
				out := e.waitPlanted(t, task.ID, "corrupt")
				t.Logf("planted: %s", out)
				if !strings.Contains(out, "commit:ok") {
					t.Fatalf("the agent could not commit:\n%s", out)
				}
				ids := []string{task.ID}
				ctx, cancel := trustCtx()
				defer cancel()
				d, err := e.d.Client.TaskDiff(ctx, task.ID, api.DiffInput{Patch: true})
				if err == nil {
					t.Errorf("the diff of a branch whose object does not check was not refused; it shows:\n%s", d.Patch)
				} else {
					t.Logf("diff refused: %v", err)
				}
				e.heldOrReport(t, r, "diff of a corrupt branch", ids, d.Patch, errText(err))
				res, err := e.d.Client.MergeTask(ctx, task.ID, api.MergeInput{})
				if err == nil {
					t.Errorf("the merge of a branch whose object does not check was not refused: main is %s", short(res.Commit))
				} else {
					t.Logf("merge refused: %v", err)
				}
				e.heldOrReport(t, r, "merge of a corrupt branch", ids, errText(err))
				push, err := e.d.Client.PushTask(ctx, task.ID, api.PushInput{})
				if err == nil {
					t.Errorf("the push of a branch whose object does not check was not refused: pushed %s", short(push.Commit))
				}
				if o, err := e.git(r.origin, "rev-parse", "--verify", "--quiet", "refs/heads/"+task.Workspace.Branch); err == nil {
					t.Errorf("origin got the corrupt branch: %s", o)
				}
				e.heldOrReport(t, r, "push of a corrupt branch", ids, errText(err))
			})
		})
	}
}

// The attack matrix: rows are what a confined agent can plant, grouped so
// one agent plants a group in one turn (each plantable with markers of its
// own name, so a cell tells which ran); columns are what the host does
// over the task. A group's non-destructive operations run in sequence on
// one task, checking after each; each destructive one (merges, archive,
// discard, push, pr) gets a task of its own, planted the same way.
//
// The plantables come from git's documentation: git-config(1) (every key
// under which git runs a program or follows a pointer, in every place git
// reads configuration from a repository or worktree: config.worktree,
// the administrative directory's config, include.path and includeIf, the
// common config), gitattributes(5) (in the tree, in a subdirectory, in
// info/attributes, core.attributesFile; filter, diff, merge,
// working-tree-encoding, ident, export-subst), githooks(5) (every hook,
// in hooks/ of each git directory and behind core.hooksPath),
// gitrepository-layout(5) (objects: a substituted loose object, a planted
// pack, info/alternates, a fan-out directory made a link, info/grafts,
// replace refs; refs and pointers: the worktree's .git file, commondir,
// gitdir, HEAD as a symbolic ref to main, the branch as a symbolic ref or
// at a blob, packed-refs, other branches, per-worktree refs, MERGE_HEAD
// and the sequencer's and rebase's state, shallow), gitmodules(5) (a
// gitlink whose sub/.git holds a hostile config, a submodule whose .git
// file points into the administrative directory, .gitmodules' url and
// update, an untracked nested repository) and, in the worktree, links (to
// the operator's key, to /, to the markers, through .env, conf and
// .kandev), a FIFO, huge files and names and contents holding terminal
// escapes.

// trustGroup is a row group: what one agent plants in one turn.
type trustGroup struct {
	name   string
	plants []string // the plantables, as the report names them
	// worktreeConfig: the operator set extensions.worktreeConfig.
	worktreeConfig bool
	// operatorCommits: the operator commits on main (m.txt) after each
	// task's worktree is made, so a merge merges content (and would use
	// a merge driver, were one honoured).
	operatorCommits bool
	body            func(t *testing.T, e *trustEnv, r *trustRepo) string
}

// trustOp is a column: an operation of the host's over a planted task.
type trustOp struct {
	name  string
	fresh bool // destructive: on a task of its own
	run   func(t *testing.T, c *trustCell)
}

// trustCell is one operation over one group's task, and what it saw.
type trustCell struct {
	e     *trustEnv
	r     *trustRepo
	task  core.Task
	ids   *[]string // the group's tasks, for the leak scan
	child *string   // the operator's child of the group's task
	bad   []string  // breaks the operation found itself
	outs  []string  // what it showed (client results)
	term  []string  // what it printed on the operator's terminal (CLI)
	// refused are the errors the operation answered.
	refused []string
}

func (c *trustCell) show(s ...string) { c.outs = append(c.outs, s...) }

// fail records what the operation answered: an error is shown (it must
// leak nothing either) and noted, so the log says which cells ran their
// operation and which were refused it (a refusal holds too).
func (c *trustCell) fail(err error) {
	if err != nil {
		c.outs = append(c.outs, err.Error())
		c.refused = append(c.refused, err.Error())
	}
}
func (c *trustCell) print(s ...string) { c.term = append(c.term, s...) }
func (c *trustCell) cli(args ...string) {
	o, code := c.e.cli(args...)
	c.print(o)
	if code != 0 {
		c.refused = append(c.refused, fmt.Sprintf("kandev %s: exit %d: %s", strings.Join(args, " "), code, tail(strings.TrimSpace(o), 200)))
	}
}

// operatorGit is the operator's own git in the main checkout, after an
// operation: whatever it prints is the operator's own business, but it
// must run nothing of the agent's (the cell's marker check).
func (c *trustCell) operatorGit(t *testing.T, cmds ...[]string) {
	for _, args := range cmds {
		_, _ = c.e.git(c.r.dir, args...)
	}
}

var trustOps = []trustOp{
	{name: "plant", run: func(t *testing.T, c *trustCell) {}},
	{name: "diff", run: func(t *testing.T, c *trustCell) {
		ctx, cancel := trustCtx()
		defer cancel()
		d, err := c.e.d.Client.TaskDiff(ctx, c.task.ID, api.DiffInput{Patch: true})
		c.show(d.Stat, d.Patch)
		c.fail(err)
	}},
	{name: "diff (CLI)", run: func(t *testing.T, c *trustCell) { c.cli("task", "diff", c.task.ID) }},
	{name: "diff --stat", run: func(t *testing.T, c *trustCell) {
		ctx, cancel := trustCtx()
		defer cancel()
		d, err := c.e.d.Client.TaskDiff(ctx, c.task.ID, api.DiffInput{})
		c.show(d.Stat, jsonText(d.Files))
		c.fail(err)
	}},
	{name: "diff --stat (CLI)", run: func(t *testing.T, c *trustCell) { c.cli("task", "diff", "--stat", c.task.ID) }},
	{name: "task show and list", run: func(t *testing.T, c *trustCell) {
		c.cli("task", "show", c.task.ID)
		c.cli("task", "show", "--json", c.task.ID)
		c.cli("task", "list", "--all")
	}},
	{name: "the agent's get_task_diff", run: func(t *testing.T, c *trustCell) {
		c.show(c.e.say(t, c.task.ID, call("get_task_diff_kandev", map[string]any{"task_id": c.task.ID})+"\n"+
			call("get_task_diff_kandev", map[string]any{"task_id": c.task.ID, "stat_only": true}), "asked for its diff"))
	}},
	{name: "review", run: func(t *testing.T, c *trustCell) {
		c.cli("task", "review", c.task.ID, "--comment", "agent.txt:1", "is this right?")
		c.e.settled(t, c.task.ID)
		c.cli("task", "review", c.task.ID, "--list")
		ctx, cancel := trustCtx()
		defer cancel()
		rv, err := c.e.d.Client.TaskReview(ctx, c.task.ID)
		c.show(jsonText(rv))
		c.fail(err)
	}},
	{name: "child with a new worktree", run: func(t *testing.T, c *trustCell) {
		ctx, cancel := trustCtx()
		defer cancel()
		child, err := c.e.d.Client.CreateTask(ctx, api.CreateTaskInput{Title: "the operator's child", ParentID: c.task.ID,
			CWD: c.task.Workspace.Dir, Workspace: "new", Sandbox: c.e.mode, Profile: c.e.profile, Prompt: "mock: say child up"})
		c.show(jsonText(child.Workspace))
		c.fail(err)
		if err == nil {
			*c.child = child.ID
			*c.ids = append(*c.ids, child.ID)
		}
	}},
	{name: ".worktreeinclude", run: func(t *testing.T, c *trustCell) {
		if *c.child == "" {
			c.show("no child worktree was made")
			return
		}
		dir := get(t, c.e.d, *c.child).Workspace.Dir
		realDir, _ := filepath.EvalSymlinks(dir)
		if _, err := os.Lstat(filepath.Join(dir, ".private")); err == nil {
			c.bad = append(c.bad, "the child's worktree got .private, which the operator's .worktreeinclude does not list")
		}
		for _, rel := range []string{".env", "conf/local.env"} {
			p := filepath.Join(dir, rel)
			fi, err := os.Lstat(p)
			if err != nil {
				continue
			}
			parent, _ := filepath.EvalSymlinks(filepath.Dir(p))
			if fi.Mode().IsRegular() && !strings.HasPrefix(parent+"/", realDir+"/") {
				c.bad = append(c.bad, fmt.Sprintf("the include %s was written through a link, to %s", rel, parent))
			}
		}
	}},
	{name: "setup (the child starts)", run: func(t *testing.T, c *trustCell) {
		if *c.child == "" {
			c.show("no child to start")
			return
		}
		ctx, cancel := trustCtx()
		defer cancel()
		_, err := c.e.d.Client.StartTask(ctx, *c.child, api.StartTaskInput{})
		c.fail(err)
		if err == nil {
			c.e.settled(t, *c.child)
		}
	}},
	{name: "the agent's child with a new worktree", run: func(t *testing.T, c *trustCell) {
		before := map[string]bool{}
		for _, k := range c.e.children(t, c.task.ID) {
			before[k.ID] = true
		}
		c.show(c.e.say(t, c.task.ID, call("create_task_kandev", map[string]any{"title": "the agent's child", "workspace": "new",
			"start": true, "prompt": "mock: say agent's child up"}), "asked for a child"))
		for _, k := range c.e.children(t, c.task.ID) {
			if !before[k.ID] {
				*c.ids = append(*c.ids, k.ID)
				c.e.settled(t, k.ID)
			}
		}
	}},
	{name: "worktree prune", run: func(t *testing.T, c *trustCell) {
		ctx, cancel := trustCtx()
		defer cancel()
		dry, err := c.e.d.Client.PruneWorktrees(ctx, api.PruneInput{DryRun: true})
		c.show(jsonText(dry))
		c.fail(err)
		res, err := c.e.d.Client.PruneWorktrees(ctx, api.PruneInput{})
		c.show(jsonText(res))
		c.fail(err)
	}},
	{name: "the operator's git status, log, diff, checkout", run: func(t *testing.T, c *trustCell) {
		b := "refs/heads/" + c.task.Workspace.Branch
		c.operatorGit(t, []string{"status"}, []string{"diff"}, []string{"diff", "main", b}, []string{"log", "-p", "-3", "--all"},
			[]string{"log", "--stat", "-3", b}, []string{"show", b}, []string{"branch", "-avv"}, []string{"submodule", "status"},
			[]string{"archive", "--format=tar", "-o", filepath.Join(c.e.root, "archive.tar"), "main"},
			// Into the main checkout and back; refused, not clobbering,
			// where the branch tracks a file the operator's checkout ignores.
			[]string{"checkout", "-q", "--no-overwrite-ignore", "--detach", b}, []string{"status"}, []string{"checkout", "-q", "-f", "main"},
			[]string{"switch", "-q", "-c", "operator-side"}, []string{"switch", "-q", "main"}, []string{"branch", "-q", "-D", "operator-side"})
	}},
	{name: "daemon restart (startup sweep)", run: func(t *testing.T, c *trustCell) {
		message(t, c.e.d, c.task.ID, "mock: say hanging\nmock: hang")
		daemontest.Eventually(t, trustWait, "the turn to hang", func() bool { return saidContains(t, c.e.d, c.task.ID, "hanging") })
		before := get(t, c.e.d, c.task.ID).Session.ID
		c.e.d.Kill9()
		c.e.d.Restart()
		// The cut turn runs again in a new session (resumed by the
		// daemon, or started here): the confined agent is back over its
		// planted worktree.
		ctx, cancel := trustCtx()
		defer cancel()
		resumed := func() bool {
			s := get(t, c.e.d, c.task.ID).Session
			return s != nil && s.ID != before && s.State == core.SessionRunning
		}
		if !resumed() {
			_, err := c.e.d.Client.StartTask(ctx, c.task.ID, api.StartTaskInput{})
			c.fail(err)
		}
		daemontest.Eventually(t, trustWait, "the cut turn to run again", resumed)
		_, err := c.e.d.Client.StopTask(ctx, c.task.ID, api.StopTaskInput{})
		c.fail(err)
		_, err = c.e.d.Client.DropQueued(ctx, c.task.ID, api.DropQueueInput{All: true})
		c.fail(err)
		c.e.settled(t, c.task.ID)
	}},
	{name: "merge", fresh: true, run: func(t *testing.T, c *trustCell) { c.merge(t, api.MergeInput{}) }},
	{name: "merge --squash", fresh: true, run: func(t *testing.T, c *trustCell) {
		c.merge(t, api.MergeInput{Squash: true, Message: "squash of " + c.task.ID})
	}},
	{name: "merge --archive (CLI)", fresh: true, run: func(t *testing.T, c *trustCell) {
		ctx, cancel := trustCtx()
		defer cancel()
		review, err := c.e.d.Client.TaskDiff(ctx, c.task.ID, api.DiffInput{})
		c.fail(err)
		o, code := c.e.cli("task", "merge", c.task.ID, "--archive", "-m", "merged by the CLI")
		c.print(o)
		if code == 0 {
			c.bad = append(c.bad, c.e.merged(t, c.r, review)...)
		}
		c.afterMerge(t)
	}},
	{name: "archive (done)", fresh: true, run: func(t *testing.T, c *trustCell) {
		ctx, cancel := trustCtx()
		defer cancel()
		_, err := c.e.d.Client.SetTaskStatus(ctx, c.task.ID, core.StatusDone)
		c.fail(err)
		_, err = c.e.d.Client.ArchiveTask(ctx, c.task.ID, api.ArchiveTaskInput{})
		c.fail(err)
		d, err := c.e.d.Client.TaskDiff(ctx, c.task.ID, api.DiffInput{Patch: true})
		c.show(d.Patch)
		c.fail(err)
	}},
	{name: "discard", fresh: true, run: func(t *testing.T, c *trustCell) {
		ctx, cancel := trustCtx()
		defer cancel()
		_, err := c.e.d.Client.DiscardTask(ctx, c.task.ID, api.DiscardTaskInput{})
		c.fail(err)
	}},
	{name: "push", fresh: true, run: func(t *testing.T, c *trustCell) {
		ctx, cancel := trustCtx()
		defer cancel()
		res, err := c.e.d.Client.PushTask(ctx, c.task.ID, api.PushInput{})
		c.show(jsonText(res))
		c.fail(err)
	}},
	{name: "pr", fresh: true, run: func(t *testing.T, c *trustCell) {
		ctx, cancel := trustCtx()
		defer cancel()
		res, err := c.e.d.Client.PullRequestTask(ctx, c.task.ID, api.PullRequestInput{})
		c.show(jsonText(res))
		c.fail(err)
	}},
}

// merge is a merge through the client: what merges must be what the
// task's diff showed, and main must only move forward.
func (c *trustCell) merge(t *testing.T, in api.MergeInput) {
	ctx, cancel := trustCtx()
	defer cancel()
	review, err := c.e.d.Client.TaskDiff(ctx, c.task.ID, api.DiffInput{})
	c.fail(err)
	res, err := c.e.d.Client.MergeTask(ctx, c.task.ID, in)
	c.show(jsonText(res))
	c.fail(err)
	if err == nil {
		c.bad = append(c.bad, c.e.merged(t, c.r, review)...)
	}
	c.afterMerge(t)
}

// afterMerge is what the operator does next in the main checkout.
func (c *trustCell) afterMerge(t *testing.T) {
	c.operatorGit(t, []string{"status"}, []string{"diff"}, []string{"log", "-p", "-2"}, []string{"show", "--stat"})
}

func TestTrustMatrix(t *testing.T) {
	for _, mode := range trustModes {
		t.Run(mode, func(t *testing.T) { testTrustMatrix(t, mode) })
	}
}

func testTrustMatrix(t *testing.T, mode string) {
	began := time.Now()
	e := newTrustEnv(t, mode)
	groups := trustGroups()
	if only := os.Getenv("KANDEV_TEST_TRUST_GROUPS"); only != "" {
		// A few rows only (comma-separated group names), to work on them.
		var some []trustGroup
		for _, g := range groups {
			if strings.Contains(","+only+",", ","+g.name+",") {
				some = append(some, g)
			}
		}
		groups = some
	}
	var cells, held, plants int
	var broken []string
	for _, g := range groups {
		plants += len(g.plants)
		t.Run(g.name, func(t *testing.T) {
			gBegan := time.Now()
			r := e.newRepo(t, g.worktreeConfig)
			script := e.trustScript(r, g.body(t, e, r))
			prompt := plantPrompt(g.name, script)
			var fresh []trustOp
			for _, op := range trustOps {
				if op.fresh {
					fresh = append(fresh, op)
				}
			}
			// The group's tasks: one for the non-destructive operations,
			// one for each destructive one; all planted at once.
			tasks := make([]core.Task, 1+len(fresh))
			for i := range tasks {
				tasks[i] = e.box(t, r.dir, fmt.Sprintf("%s %d", g.name, i), prompt, false)
				if g.operatorCommits {
					e.commit(t, r, "m.txt", fmt.Sprintf("the operator's line1 (%d)\nline2\nline3\n", i))
				}
			}
			ids := []string{}
			ctx, cancel := trustCtx()
			for _, task := range tasks {
				ids = append(ids, task.ID)
				if _, err := e.d.Client.StartTask(ctx, task.ID, api.StartTaskInput{}); err != nil {
					t.Fatalf("start %s: %v", task.ID, err)
				}
			}
			cancel()
			for i, task := range tasks {
				out := e.waitPlanted(t, task.ID, g.name)
				if i == 0 {
					t.Logf("%s planted (%s): %s", g.name, time.Since(gBegan).Round(time.Millisecond), tail(out, 2000))
				}
				if !strings.Contains(out, "plant result:") {
					t.Fatalf("the planting script of %s did not run:\n%s", task.ID, out)
				}
			}
			child := ""
			run := func(op trustOp, task core.Task) {
				c := &trustCell{e: e, r: r, task: task, ids: &ids, child: &child}
				opBegan := time.Now()
				op.run(t, c)
				cells++
				cell := fmt.Sprintf("%s (%s) × %s", g.name, mode, op.name)
				if len(c.refused) > 0 {
					t.Logf("%s: refused: %s", cell, tail(strings.Join(c.refused, " | "), 400))
				}
				if e.cellHeld(t, r, cell, ids, c.bad, c.outs, c.term) {
					held++
				} else {
					broken = append(broken, g.name+" × "+op.name)
				}
				if d := time.Since(opBegan); d > 20*time.Second {
					t.Logf("%s took %s", cell, d.Round(time.Millisecond))
				}
			}
			f := 1
			for _, op := range trustOps {
				if op.fresh {
					run(op, tasks[f])
					f++
				} else {
					run(op, tasks[0])
				}
			}
			// Let the group's agents go.
			ctx, cancel = trustCtx()
			defer cancel()
			for _, id := range ids {
				_, _ = e.d.Client.StopTask(ctx, id, api.StopTaskInput{})
			}
			t.Logf("%s: %d operations in %s", g.name, len(trustOps), time.Since(gBegan).Round(time.Millisecond))
		})
	}
	var names []string
	for _, g := range groups {
		names = append(names, g.name+" ("+strings.Join(g.plants, ", ")+")")
	}
	t.Logf("trust matrix under %s: %d plantables in %d groups × %d operations = %d cells run, %d held, in %s",
		mode, plants, len(groups), len(trustOps), cells, held, time.Since(began).Round(time.Second))
	t.Logf("plantables: %s", strings.Join(names, "; "))
	if len(broken) > 0 {
		t.Logf("cells that did not hold: %s", strings.Join(broken, "; "))
	}
}

// forgedPack is a pack holding one object of text whose index names it
// target: a planted pack under which git reads target as text (packs are
// searched before loose objects, and no read checks a name).
func (e *trustEnv) forgedPack(t *testing.T, target, text string) (name, pack, idx string) {
	t.Helper()
	dir := t.TempDir()
	e.mustGit(t, dir, "init", "-q", "scratch")
	scratch := filepath.Join(dir, "scratch")
	run := func(stdin string, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = scratch
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	oid := run(text, "hash-object", "-w", "--stdin")
	sum := run(oid+"\n", "pack-objects", "-q", filepath.Join(dir, "p"))
	p, err := os.ReadFile(filepath.Join(dir, "p-"+sum+".pack"))
	if err != nil {
		t.Fatal(err)
	}
	x, err := os.ReadFile(filepath.Join(dir, "p-"+sum+".idx"))
	if err != nil {
		t.Fatal(err)
	}
	// Index v2: magic, version, 256 fan-out counts, then the names.
	if !bytes.HasPrefix(x, []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}) || len(x) < 8+1024+20+8+40 {
		t.Fatalf("pack index of an unknown form")
	}
	tb, err := hex.DecodeString(target)
	if err != nil || len(tb) != 20 {
		t.Fatalf("bad object name %q", target)
	}
	copy(x[8+1024:], tb)
	for i := 0; i < 256; i++ {
		n := uint32(0)
		if i >= int(tb[0]) {
			n = 1
		}
		binary.BigEndian.PutUint32(x[8+4*i:], n)
	}
	h := sha1.Sum(x[:len(x)-20])
	copy(x[len(x)-20:], h[:])
	return sum, base64.StdEncoding.EncodeToString(p), base64.StdEncoding.EncodeToString(x)
}

func trustGroups() []trustGroup {
	return []trustGroup{
		{name: "control", plants: []string{"nothing hostile: commits and uncommitted work"},
			body: func(t *testing.T, e *trustEnv, r *trustRepo) string {
				return "try commit commit_work\npending_work\n"
			}},
		{name: "config", worktreeConfig: true, operatorCommits: true,
			plants: []string{"config.worktree (every key that runs a program or follows a pointer)", "the admin directory's config",
				"include.path", "includeIf gitdir", "includeIf onbranch", "the common config", "core.attributesFile",
				".gitattributes (filter, diff, merge, working-tree-encoding, ident, export-subst)", "a subdirectory's .gitattributes",
				"info/attributes (admin directory and common)", "hooks in the admin directory, the common hooks, core.hooksPath",
				".kandev/setup on the branch", ".worktreeinclude on the branch"},
			body: func(t *testing.T, e *trustEnv, r *trustRepo) string {
				return `cat > .gitattributes <<'ATTR'
*.txt filter=x diff=x merge=x
*.a filter=xa diff=xa merge=xa
*.i filter=xi diff=xi merge=xi
*.f filter=xf diff=xf merge=xf
*.b filter=xb diff=xb merge=xb
*.c filter=xc diff=xc merge=xc
*.p filter=xp diff=xt
*.e working-tree-encoding=UTF-16 diff=x
*.id ident
* export-subst
ATTR
for f in a.a b.i c.f d.b e.c g.p h.z k.q y.y; do echo content > $f; done
printf '$Id$\n' > k.id
mkdir -p deep && printf '* filter=xd diff=xd merge=xd\n' > deep/.gitattributes && echo deep > deep/s.txt
mkdir -p .kandev && mkx .kandev/setup config-setup-on-branch && printf 'cat %s\n' "$SECRET" >> .kandev/setup
printf '*\n.private\n' > .worktreeinclude
printf 'line1\nline2\nthe agent line3\n' > m.txt
try commit commit_work
# Committed on its own: without iconv's modules (a container's git, say)
# git cannot encode it, and it stays pending work.
printf '\377\376c\000o\000n\000\n\000' > w.e
p_encoded() { git add w.e && git commit -qm "an encoded file"; }
try encoded-commit p_encoded
for f in a.a b.i c.f d.b e.c g.p h.z k.q y.y deep/s.txt; do echo changed >> $f; done
pending_work
p_includes() { cfg "$AD/config.worktree" include.path "$AD/inc.cfg" &&
  cfg "$AD/config.worktree" "includeIf.gitdir:$AD/.path" "$AD/incif.cfg" &&
  cfg "$AD/config.worktree" "includeIf.onbranch:kandev/**.path" "$AD/incbr.cfg"; }
p_attrfile() { printf '*.y filter=y diff=y merge=y\n' > "$AD/attributes-file" &&
  cfg "$AD/config.worktree" core.attributesFile "$AD/attributes-file" && drivers "$AD/config.worktree" attrfile y; }
p_admininfo() { drivers "$AD/config.worktree" admininfoattr z && mkdir -p "$AD/info" && printf '*.z filter=z diff=z merge=z\n' > "$AD/info/attributes"; }
p_commoninfo() { drivers "$AD/config.worktree" commoninfoattr zq && printf '*.q filter=zq diff=zq merge=zq\n' >> "$CD/info/attributes"; }
try config-worktree-includes p_includes
try config-worktree hostile "$AD/config.worktree" cfg x
try admin-config hostile "$AD/config" admincfg xa
try include-path hostile "$AD/inc.cfg" inc xi
try includeif-gitdir hostile "$AD/incif.cfg" incif xf
try includeif-onbranch hostile "$AD/incbr.cfg" incbr xb
try common-config hostile "$CD/config" commoncfg xc
try attributes-file p_attrfile
try admin-info-attributes p_admininfo
try common-info-attributes p_commoninfo
try deep-attributes drivers "$AD/config.worktree" deepattr xd
try admin-hooks hooks "$AD/hooks" adminhooks
try common-hooks hooks "$CD/hooks" commonhooks
`
			}},
		{name: "objects",
			plants: []string{"a substituted loose object of main's (f.txt)", "a forged pack naming main's g.txt",
				"objects/info/alternates to the agent's objects (h.txt)", "a fan-out directory made a link (i.txt)",
				"objects/info/grafts", "a replace ref (j.txt)"},
			body: func(t *testing.T, e *trustEnv, r *trustRepo) string {
				name, pack, idx := e.forgedPack(t, e.oid(t, r, "g.txt"), "the agent's g.txt\n")
				return fmt.Sprintf("PACKNAME=%s\nPACK=%s\nIDX=%s\n", name, pack, idx) + `try commit commit_work
pending_work
F=$(git rev-parse main:f.txt); H=$(git rev-parse main:h.txt); I=$(git rev-parse main:i.txt); J=$(git rev-parse main:j.txt)
C=$(printf 'grafted history\n' | git commit-tree "$(git rev-parse HEAD^{tree})")
EJ=$(printf 'the replacement of j.txt\n' | git hash-object -w --stdin)
p_pack() { ok=1; for o in $OBJ $POBJ; do mkdir -p "$o/pack" 2>/dev/null
  echo "$PACK" | base64 -d > "$o/pack/pack-$PACKNAME.pack" && echo "$IDX" | base64 -d > "$o/pack/pack-$PACKNAME.idx" && ok=0; done; return $ok; }
p_alternates() { mkdir -p "$AD/evilalt" && subst "$H" "the agent's h.txt\n" "$AD/evilalt" || return 1
  ok=1
  for o in $OBJ $POBJ; do mkdir -p "$o/info" 2>/dev/null
    { echo "$AD/evilalt"; cat "$o/info/alternates" 2>/dev/null; } > /tmp/kandev-alt && cp /tmp/kandev-alt "$o/info/alternates" && ok=0; done
  rm -f "$OBJ/$(fan $H)"
  return $ok; }
p_fanout() { d=${I%"${I#??}"}; mkdir -p "$AD/evilfan/$d" && { [ ! -d "$OBJ/$d" ] || cp -rL "$OBJ/$d" "$AD/evilfan/"; } &&
  subst "$I" "the agent's i.txt\n" "$AD/evilfan" && rm -rf "$OBJ/$d" && ln -s "$AD/evilfan/$d" "$OBJ/$d"; }
p_grafts() { ok=1; for o in $OBJ $POBJ; do mkdir -p "$o/info" 2>/dev/null; echo "$(git rev-parse main) $C" >> "$o/info/grafts" && ok=0; done; return $ok; }
try obj-loose-substitute subst "$F" "the agent's f.txt\n"
try obj-forged-pack p_pack
try obj-alternates p_alternates
try obj-fanout-link p_fanout
try obj-grafts p_grafts
try obj-replace-ref git update-ref "refs/replace/$J" "$EJ"
`
			}},
		{name: "corrupt-branch", plants: []string{"the branch's own new blob substituted after its commit"},
			body: func(t *testing.T, e *trustEnv, r *trustRepo) string {
				return `printf "the agent's reviewed text\n" > new.txt
try commit commit_work
pending_work
N=$(git rev-parse HEAD:new.txt)
try own-object-substitute subst "$N" "the agent's unreviewed text\n"
`
			}},
		{name: "pointers", worktreeConfig: true,
			plants: []string{"packed-refs", "main's ref", "a tag", "a replace ref for main", "a remote-tracking ref",
				"a kandev/ branch no task owns", "other tasks' branches", "refs/worktree and refs/bisect",
				"MERGE_HEAD, CHERRY_PICK_HEAD, REVERT_HEAD, ORIG_HEAD", "sequencer and rebase-merge state (exec lines)",
				"shallow (admin and common)", "the admin directory's gitdir", "commondir to a hostile git directory",
				"the worktree's .git file to a hostile git directory"},
			body: func(t *testing.T, e *trustEnv, r *trustRepo) string {
				return `printf '*.g filter=xg diff=xg\n*.m filter=xm diff=xm\n' > .gitattributes && echo g > a.g && echo m > a.m
try commit commit_work
echo more >> a.g; echo more >> a.m
pending_work
C=$(printf 'an orphan history\n' | git commit-tree "$(git rev-parse HEAD^{tree})")
p_packed() { echo "$C refs/heads/main" >> "$CD/packed-refs"; }
p_others() { ok=1; for f in "$CD"/refs/heads/kandev/*; do [ "$f" = "$CD/$ME" ] && continue; [ -f "$f" ] || continue; echo "$C" > "$f" && ok=0; done; return $ok; }
p_wtrefs() { git update-ref refs/worktree/evil "$C" && git update-ref refs/bisect/bad "$C"; }
p_mergestate() { echo "$C" > "$AD/MERGE_HEAD" && echo "merge the orphan" > "$AD/MERGE_MSG" && : > "$AD/MERGE_MODE" &&
  echo "$C" > "$AD/CHERRY_PICK_HEAD" && echo "$C" > "$AD/REVERT_HEAD" && echo "$C" > "$AD/ORIG_HEAD"; }
p_sequencer() { mkdir -p "$AD/sequencer" "$AD/rebase-merge" && printf 'exec touch %s/ptr-sequencer-exec\n' "$M" > "$AD/sequencer/todo" &&
  printf 'exec touch %s/ptr-rebase-exec\n' "$M" > "$AD/rebase-merge/git-rebase-todo" && echo "$ME" > "$AD/rebase-merge/head-name" &&
  echo "$C" > "$AD/rebase-merge/onto" && git rev-parse HEAD > "$AD/rebase-merge/orig-head" && : > "$AD/rebase-merge/interactive"; }
p_shallow() { git rev-parse main > "$AD/shallow" && git rev-parse main >> "$CD/shallow"; }
p_gitdir() { echo "$WT/elsewhere/.git" > "$AD/gitdir"; }
p_commondir() { ngit "$AD" init -q --bare fakecommon && hostile "$AD/fakecommon/config" ptr-commondir xm && echo "$AD/fakecommon" > "$AD/commondir"; }
p_dotgit() { ngit "$AD" init -q --bare fakegit && hostile "$AD/fakegit/config" ptr-dotgit xg && printf 'gitdir: %s\n' "$AD/fakegit" > "$WT/.git"; }
try ptr-packed-refs p_packed
try ptr-main-ref git update-ref refs/heads/main "$C"
try ptr-tag git update-ref refs/tags/kandev-evil "$C"
try ptr-replace-main git update-ref "refs/replace/$(git rev-parse main)" "$C"
try ptr-remote-ref git update-ref refs/remotes/origin/main "$C"
try ptr-orphan-kandev-branch git update-ref "$ME-orphan" "$C"
try ptr-other-branches p_others
try ptr-worktree-refs p_wtrefs
try ptr-merge-state p_mergestate
try ptr-sequencer-state p_sequencer
try ptr-shallow p_shallow
try ptr-gitdir-record p_gitdir
try ptr-commondir p_commondir
try ptr-dotgit-file p_dotgit
`
			}},
		{name: "head-to-main", plants: []string{"the worktree's HEAD a symbolic ref to main, with uncommitted work"},
			body: func(t *testing.T, e *trustEnv, r *trustRepo) string {
				return `try commit commit_work
echo "the agent's change to f.txt" >> f.txt
pending_work
p_head() { printf 'ref: refs/heads/main\n' > "$AD/HEAD"; }
try head-symref-to-main p_head
`
			}},
		{name: "branch-to-main", plants: []string{"the branch a symbolic ref to main, with uncommitted work"},
			body: func(t *testing.T, e *trustEnv, r *trustRepo) string {
				return `try commit commit_work
echo "the agent's change to f.txt" >> f.txt
pending_work
p_bsym() { printf 'ref: refs/heads/main\n' > "$CD/$ME"; }
try branch-symref-to-main p_bsym
`
			}},
		{name: "branch-at-a-blob", plants: []string{"the branch pointing at a blob"},
			body: func(t *testing.T, e *trustEnv, r *trustRepo) string {
				return `try commit commit_work
pending_work
p_bblob() { b=$(git rev-parse HEAD:agent.txt) && printf '%s\n' "$b" > "$CD/$ME"; }
try branch-at-a-blob p_bblob
`
			}},
		{name: "submodules", worktreeConfig: true,
			plants: []string{"a gitlink whose sub/.git holds a hostile config and hooks", "a submodule whose .git file points into the admin directory",
				".gitmodules url (ext::) and update (!command)", "an untracked nested repository with a hostile config",
				"submodule recursion and commands in config.worktree", "dirty submodules"},
			body: func(t *testing.T, e *trustEnv, r *trustRepo) string {
				return `p_sub() { ngit "$WT" init -q sub && printf '* filter=s diff=s\n' > sub/.gitattributes && echo s > sub/s.txt &&
  ngit "$WT/sub" add -A && ngit "$WT/sub" commit -qm sub && git update-index --add --cacheinfo "160000,$(ngit "$WT/sub" rev-parse HEAD),sub"; }
p_sub2() { ngit "$WT" init -q --separate-git-dir="$AD/sub2git" sub2 && printf '* filter=s2 diff=s2\n' > sub2/.gitattributes && echo s2 > sub2/s.txt &&
  ngit "$WT/sub2" add -A && ngit "$WT/sub2" commit -qm sub2 && git update-index --add --cacheinfo "160000,$(ngit "$WT/sub2" rev-parse HEAD),sub2"; }
p_gitmodules() { cat > .gitmodules <<EOF
[submodule "sub"]
	path = sub
	url = ext::sh -c touch% $M/sub-gitmodules-url
	update = !touch $M/sub-gitmodules-update
	fetchRecurseSubmodules = true
[submodule "sub2"]
	path = sub2
	url = ./sub2
	update = !touch $M/sub2-gitmodules-update
EOF
git add .gitmodules; }
p_nested() { ngit "$WT" init -q nested && printf '* filter=n diff=n\n' > nested/.gitattributes && echo n > nested/n.txt &&
  ngit "$WT/nested" add -A && ngit "$WT/nested" commit -qm nested && echo dirty >> nested/n.txt; }
try sub-gitlink p_sub
try sub-gitfile p_sub2
try gitmodules p_gitmodules
try commit commit_work
echo dirty >> sub/s.txt; echo dirty >> sub2/s.txt
try nested-repo p_nested
pending_work
try sub-repo-config hostile "$WT/sub/.git/config" sub-repo s
try sub-repo-hooks hooks "$WT/sub/.git/hooks" sub-repo-defaulthook
try sub-gitfile-config hostile "$AD/sub2git/config" sub-gitfile s2
try sub-gitfile-hooks hooks "$AD/sub2git/hooks" sub-gitfile-defaulthook
try nested-repo-config hostile "$WT/nested/.git/config" nested n
try nested-repo-hooks hooks "$WT/nested/.git/hooks" nested-defaulthook
try submodule-worktree-config hostile "$AD/config.worktree" sub-cfg x
`
			}},
		{name: "files",
			plants: []string{"a link to the operator's key", "a link to /", "links to and into the markers' directory",
				".env a link (an included file)", "conf a link (an included file's directory)", ".kandev a link to a setup in the admin directory",
				"a name and a content with terminal escapes", "a FIFO", "a sparse 64 MiB file", "an 8 MiB text file (its patch over the 4 MiB bound)"},
			body: func(t *testing.T, e *trustEnv, r *trustRepo) string {
				return `p_links() { ln -s "$SECRET" link-secret && ln -s / link-root && ln -s "$M" link-markers && ln -s "$M/files-link-write" link-write; }
p_envlink() { rm -f .env && ln -s "$M/files-env-through-link" .env && git add -f .env; }
p_conflink() { rm -rf conf && ln -s "$M" conf && git add -f conf; }
p_kandevlink() { mkdir -p "$AD/evilkandev" && mkx "$AD/evilkandev/setup" files-kandev-link-setup && ln -s "$AD/evilkandev" .kandev; }
p_escapes() { printf 'x\n' > "$(printf 'esc-\033]0;retitled\007.txt')" && printf 'see \033]52;c;cHduZWQ=\007 and \033[2J cleared\n' > esc-content.txt; }
p_fifo() { mkfifo fifo; }
p_huge() { truncate -s 64M huge.bin; }
p_hugetext() { yes 'a huge line of text the agent wrote' | head -c 8M > huge.txt; }
try links p_links
try env-link p_envlink
try conf-link p_conflink
try kandev-link p_kandevlink
try escapes p_escapes
try commit commit_work
try fifo p_fifo
try huge-sparse p_huge
try huge-text p_hugetext
pending_work
`
			}},
	}
}
