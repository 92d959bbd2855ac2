package mockagent

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// fakeTemp points os.TempDir at a fresh directory for the test, so that the
// fallback state dir never touches the real one, and returns the fallback's
// path in it.
func fakeTemp(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	return filepath.Join(tmp, "kandev-mock-agent-"+strconv.Itoa(os.Getuid()))
}

func TestStateDir(t *testing.T) {
	fallback := fakeTemp(t)
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	check := func(what, want string, wantPrivate bool) {
		t.Helper()
		if got, private := stateDir(getenv); got != want || private != wantPrivate {
			t.Errorf("%s: stateDir = %q, %v; want %q, %v", what, got, private, want, wantPrivate)
		}
	}
	check("empty environment", fallback, true)
	env["HOME"] = filepath.Join(t.TempDir(), "missing")
	check("HOME that does not exist", fallback, true)
	env["HOME"] = "relative/home"
	check("relative HOME", fallback, true)
	home := t.TempDir()
	env["HOME"] = home
	check("with HOME", filepath.Join(home, ".local", "state", "kandev-mock"), false)
	env["XDG_STATE_HOME"] = "relative/state"
	check("relative XDG_STATE_HOME", filepath.Join(home, ".local", "state", "kandev-mock"), false)
	env["XDG_STATE_HOME"] = "/xdg/state"
	check("with XDG_STATE_HOME", "/xdg/state/kandev-mock", false)
	env["KANDEV_HOME"] = "/home/k"
	check("with KANDEV_HOME", "/home/k/mock-agent", false)
	env["KANDEV_MOCK_STATE_DIR"] = "/state"
	check("with KANDEV_MOCK_STATE_DIR", "/state", false)
}

// TestPrivateStateDir: without KANDEV_MOCK_STATE_DIR, KANDEV_HOME or a
// home, the agent keeps its state in its own 0700 directory under the temp
// dir, and a later agent resumes from it.
func TestPrivateStateDir(t *testing.T) {
	leakCheck(t)
	dir := fakeTemp(t)
	// An empty KANDEV_MOCK_STATE_DIR: the harness leaves the default.
	env := map[string]string{"KANDEV_MOCK_STATE_DIR": ""}

	h1 := newHarness(t, env)
	sid := h1.newSession()
	h1.mustPrompt(sid, "first prompt")
	h1.close()

	fi, err := os.Lstat(dir)
	if err != nil {
		t.Fatalf("state dir: %v", err)
	}
	if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("state dir mode %v, want a directory 0700", fi.Mode())
	}
	if uid := fi.Sys().(*syscall.Stat_t).Uid; int(uid) != os.Getuid() {
		t.Errorf("state dir owned by uid %d, want %d", uid, os.Getuid())
	}
	if _, err := os.Stat(filepath.Join(dir, string(sid)+".json")); err != nil {
		t.Errorf("session file: %v", err)
	}

	h2 := newHarness(t, env)
	h2.initialize()
	if _, err := h2.conn.ResumeSession(h2.ctx(), acp.ResumeSessionRequest{SessionId: sid, Cwd: t.TempDir(), McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("session/resume: %v", err)
	}
	if got, want := h2.mustPrompt(sid, "mock: history"), "history: session "+string(sid)+" turn 2; earlier: first prompt\n"; got != want {
		t.Errorf("history = %q, want %q", got, want)
	}
}

// TestPrivateStateDirRefused: whatever already sits at the fallback path,
// unless it is this user's own closed directory, is refused with an error
// naming the path, and nothing is written to or read through it.
func TestPrivateStateDirRefused(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
	}{
		{"symlink", func(t *testing.T, dir string) {
			if err := os.Symlink(t.TempDir(), dir); err != nil {
				t.Fatal(err)
			}
		}, "is a symbolic link"},
		{"dangling symlink", func(t *testing.T, dir string) {
			if err := os.Symlink(filepath.Join(t.TempDir(), "nowhere"), dir); err != nil {
				t.Fatal(err)
			}
		}, "is a symbolic link"},
		{"file", func(t *testing.T, dir string) {
			if err := os.WriteFile(dir, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "is not a directory"},
		{"open to others", func(t *testing.T, dir string) {
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
		}, "has mode 0777, open to other users"},
		{"another user's", func(t *testing.T, dir string) {
			if os.Getuid() != 0 {
				t.Skip("needs root to give a directory to another user")
			}
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "belongs to uid 65534, not to this user (uid 0)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := fakeTemp(t)
			c.setup(t, dir)
			before := listing(t, dir)
			s := store{dir: dir, private: true}

			err := s.save(sessionState{SessionID: "mock-x"})
			if err == nil || !strings.Contains(err.Error(), dir+" "+c.want) {
				t.Errorf("save: %v, want an error naming %s %q", err, dir, c.want)
			}
			_, err = s.load("mock-x")
			if err == nil || errors.Is(err, errUnknownSession) || !strings.Contains(err.Error(), dir+" "+c.want) {
				t.Errorf("load: %v, want an error naming %s %q", err, dir, c.want)
			}

			// Through ACP: session/new fails and says why.
			h := newHarness(t, map[string]string{"KANDEV_MOCK_STATE_DIR": ""})
			h.initialize()
			_, err = h.conn.NewSession(h.ctx(), acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{}})
			if err == nil || !strings.Contains(err.Error(), dir+" "+c.want) {
				t.Errorf("session/new: %v, want an error naming %s %q", err, dir, c.want)
			}
			h.close()

			if after := listing(t, dir); after != before {
				t.Errorf("refused dir changed: %q, then %q", before, after)
			}
		})
	}
}

// TestCheckPrivateOwner covers the owner check without root: this user's
// own directory, judged for another uid, is refused.
func TestCheckPrivateOwner(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkPrivate(dir, fi, os.Getuid()); err != nil {
		t.Errorf("own directory refused: %v", err)
	}
	other := os.Getuid() + 1
	err = checkPrivate(dir, fi, other)
	if want := dir + " belongs to uid " + strconv.Itoa(os.Getuid()) + ", not to this user (uid " + strconv.Itoa(other) + ")"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("checkPrivate for uid %d: %v, want %q", other, err, want)
	}
}

// listing describes what is at path: its type and, for a directory or a
// link to one, its entries.
func listing(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	out := fi.Mode().Type().String()
	entries, err := os.ReadDir(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		t.Fatal(err)
	}
	for _, e := range entries {
		out += " " + e.Name()
	}
	return out
}
