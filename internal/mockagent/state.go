package mockagent

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// sessionState is what survives the process: enough for a later mock agent
// to resume the session, answer `mock: history` and keep its reactions.
type sessionState struct {
	SessionID string     `json:"session_id"`
	Cwd       string     `json:"cwd"`
	Turns     int        `json:"turns"`
	Prompts   []string   `json:"prompts"`
	Reactions []reaction `json:"reactions"`
}

// reaction is a directive registered with `mock: on KIND: DIRECTIVE`.
type reaction struct {
	Kind      string `json:"kind"`
	Directive string `json:"directive"`
}

// errUnknownSession means no state exists for a session id.
var errUnknownSession = errors.New("unknown session")

// sessionIDRE keeps session ids safe to use as file names; ids from a
// client are checked against it before touching the disk.
var sessionIDRE = lazyRE(`^[A-Za-z0-9_-]{1,128}$`)

// store keeps one JSON file per session in dir. A private store's dir is
// the fallback under the shared system temp dir: it is created 0700 and
// checked before every use (see privateDir), so another user's directory,
// or a link planted at its path, is refused rather than written to or read.
type store struct {
	dir     string
	private bool
}

// stateDir picks where session state lives: $KANDEV_MOCK_STATE_DIR, else
// $KANDEV_HOME/mock-agent, else the user's own state dir
// ($XDG_STATE_HOME/kandev-mock, or $HOME/.local/state/kandev-mock when
// $HOME names a directory), else kandev-mock-agent-<uid> under the system
// temp dir. Only that last one sits in a directory other users share, so
// only it is private.
func stateDir(getenv func(string) string) (dir string, private bool) {
	if d := getenv("KANDEV_MOCK_STATE_DIR"); d != "" {
		return d, false
	}
	if h := getenv("KANDEV_HOME"); h != "" {
		return filepath.Join(h, "mock-agent"), false
	}
	// The XDG spec says to ignore a relative XDG_STATE_HOME.
	if x := getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "kandev-mock"), false
	}
	if h := getenv("HOME"); filepath.IsAbs(h) && h != "/" {
		if fi, err := os.Stat(h); err == nil && fi.IsDir() {
			return filepath.Join(h, ".local", "state", "kandev-mock"), false
		}
	}
	return filepath.Join(os.TempDir(), "kandev-mock-agent-"+strconv.Itoa(os.Getuid())), true
}

// privateDir makes dir, a directory in a place other users can write to,
// safe to use: it creates dir 0700 if it is missing, then refuses it unless
// it is a real directory (not a link) owned by this user and closed to
// everyone else. Once that holds, in a sticky temp dir such as /tmp nobody
// else can swap it, and only its owner can change what is inside.
func privateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create mock state dir: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("mock state dir: %w", err)
	}
	return checkPrivate(dir, fi, os.Getuid())
}

// checkPrivate is privateDir's verdict on dir, whose Lstat is fi, for the
// user uid.
func checkPrivate(dir string, fi fs.FileInfo, uid int) error {
	const fix = "refusing to use it (remove it, or set KANDEV_MOCK_STATE_DIR)"
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("mock state dir %s is a symbolic link: %s", dir, fix)
	case !fi.IsDir():
		return fmt.Errorf("mock state dir %s is not a directory: %s", dir, fix)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("mock state dir %s: cannot tell its owner: %s", dir, fix)
	}
	if int64(st.Uid) != int64(uid) {
		return fmt.Errorf("mock state dir %s belongs to uid %d, not to this user (uid %d): %s", dir, st.Uid, uid, fix)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("mock state dir %s has mode %04o, open to other users: refusing to use it (chmod 700 it, or set KANDEV_MOCK_STATE_DIR)", dir, perm)
	}
	return nil
}

// prepare makes the state dir ready for a write.
func (s store) prepare() error {
	if s.private {
		return privateDir(s.dir)
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("create mock state dir: %w", err)
	}
	return nil
}

func newSessionID() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate session id: %w", err)
	}
	return "mock-" + hex.EncodeToString(b[:]), nil
}

func (s store) path(id string) string { return filepath.Join(s.dir, id+".json") }

func (s store) load(id string) (sessionState, error) {
	if !sessionIDRE().MatchString(id) {
		return sessionState{}, fmt.Errorf("%w %q", errUnknownSession, id)
	}
	if s.private {
		// Never read what another user could have left there.
		if err := privateDir(s.dir); err != nil {
			return sessionState{}, err
		}
	}
	b, err := os.ReadFile(s.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return sessionState{}, fmt.Errorf("%w %q", errUnknownSession, id)
	}
	if err != nil {
		return sessionState{}, fmt.Errorf("read mock session %s: %w", id, err)
	}
	var st sessionState
	if err := json.Unmarshal(b, &st); err != nil {
		return sessionState{}, fmt.Errorf("parse mock session %s: %w", id, err)
	}
	st.SessionID = id
	return st, nil
}

// save writes atomically (temp file + rename) so that a crash mid-write,
// or a concurrent resume in another process, never sees half a file.
func (s store) save(st sessionState) error {
	if err := s.prepare(); err != nil {
		return err
	}
	if st.Prompts == nil {
		st.Prompts = []string{}
	}
	if st.Reactions == nil {
		st.Reactions = []reaction{}
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode mock session %s: %w", st.SessionID, err)
	}
	f, err := os.CreateTemp(s.dir, st.SessionID+".*.tmp")
	if err != nil {
		return fmt.Errorf("save mock session %s: %w", st.SessionID, err)
	}
	_, werr := f.Write(append(b, '\n'))
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("save mock session %s: %w", st.SessionID, err)
	}
	if err := os.Rename(f.Name(), s.path(st.SessionID)); err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("save mock session %s: %w", st.SessionID, err)
	}
	return nil
}
