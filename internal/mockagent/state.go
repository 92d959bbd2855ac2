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

// store keeps one JSON file per session in dir.
type store struct{ dir string }

// stateDir picks $KANDEV_MOCK_STATE_DIR, else $KANDEV_HOME/mock-agent,
// else a directory under the system temp dir.
func stateDir(getenv func(string) string) string {
	if d := getenv("KANDEV_MOCK_STATE_DIR"); d != "" {
		return d
	}
	if h := getenv("KANDEV_HOME"); h != "" {
		return filepath.Join(h, "mock-agent")
	}
	return filepath.Join(os.TempDir(), "kandev-mock-agent")
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
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("create mock state dir: %w", err)
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
