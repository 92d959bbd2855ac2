package agent

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// SessionEnv is the environment variable that marks every process of a
// session: the agent gets it from kandev, and its children, helpers and
// setsid grandchildren inherit it. A process group does not hold them all;
// this does, short of a process that rewrites its environment at exec.
const SessionEnv = "KANDEV_SESSION_ID"

// HomeEnv marks every process of a session with the kandev home whose
// daemon started it (HomeID), beside SessionEnv: agents no longer see
// KANDEV_HOME, and a daemon starting on a home must find everything an
// earlier daemon of that home left running, and nothing of another home's.
const HomeEnv = "KANDEV_SESSION_HOME"

// HomeID is a home's value of HomeEnv: a digest of its absolute directory,
// which names the home without putting its path in every agent's
// environment.
func HomeID(dir string) string {
	if dir == "" {
		return ""
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	sum := sha256.Sum256([]byte(filepath.Clean(dir)))
	return hex.EncodeToString(sum[:8])
}

// Marked is a live process carrying a session's marker: its session id,
// and its home's id when the daemon that started it set one.
type Marked struct {
	PID     int
	Session string
	Home    string
}

// MarkedProcs lists, in one pass over /proc, every live process that
// carries SessionEnv, the calling process excluded. It is the start of any
// search for what a home's sessions left running; zombies have no
// environment left and are not listed.
func MarkedProcs() []Marked {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []Marked
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		m := Marked{PID: pid}
		for _, kv := range bytes.Split(env, []byte{0}) {
			// The last value of a name wins, as for exec.
			if v, ok := bytes.CutPrefix(kv, []byte(SessionEnv+"=")); ok {
				m.Session = string(v)
			} else if v, ok := bytes.CutPrefix(kv, []byte(HomeEnv+"=")); ok {
				m.Home = string(v)
			}
		}
		if m.Session != "" {
			out = append(out, m)
		}
	}
	return out
}

// KillMarked SIGKILLs the processes listed, each only while it still
// carries the same session id (a pid may have been recycled since it was
// listed), and waits, at most wait, until none of them is left.
func KillMarked(procs []Marked, wait time.Duration) {
	var left []Marked
	for _, p := range procs {
		if HasSessionEnv(p.PID, p.Session) {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
			left = append(left, p)
		}
	}
	deadline := time.Now().Add(wait)
	for len(left) > 0 && time.Now().Before(deadline) {
		alive := left[:0]
		for _, p := range left {
			if HasSessionEnv(p.PID, p.Session) {
				alive = append(alive, p)
			}
		}
		left = alive
		if len(left) > 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// SessionProcs lists the live processes whose environment carries
// KANDEV_SESSION_ID=id, the calling process excluded. Zombies have no
// environment left and are not listed.
func SessionProcs(id string) []int {
	if id == "" {
		return nil
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if HasSessionEnv(pid, id) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// HasSessionEnv reports whether process pid carries KANDEV_SESSION_ID=id,
// so a recycled pid is never mistaken for a session's process.
func HasSessionEnv(pid int, id string) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	needle := []byte(SessionEnv + "=" + id + "\x00")
	return bytes.HasPrefix(env, needle) || bytes.Contains(env, append([]byte{0}, needle...))
}

// signalSession sends sig to every process of the session.
func signalSession(id string, sig syscall.Signal) int {
	pids := SessionProcs(id)
	for _, pid := range pids {
		_ = syscall.Kill(pid, sig)
	}
	return len(pids)
}

// KillSession SIGKILLs every process of the session and waits, at most
// wait, until none is left. It returns how many it found first.
func KillSession(id string, wait time.Duration) int {
	n := signalSession(id, syscall.SIGKILL)
	if n == 0 {
		return 0
	}
	waitSessionGone(id, wait)
	return n
}

// waitSessionGone polls /proc until no process of the session is left or
// the time is up; it reports whether they are gone. It signals nothing:
// a process that ignores signals must be killed before this waits on it.
func waitSessionGone(id string, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		if len(SessionProcs(id)) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// HelperMarker is a fresh session marker for a helper command kandev runs
// that is not an agent (a worktree's setup, doctor's probe, a
// notify_command): kind names which, for a reader of /proc.
func HelperMarker(kind string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return kind + "-" + hex.EncodeToString(b[:])
}

// EndHelper ends what a helper command left behind: its process group,
// and every process carrying its marker (a setsid child leaves the group
// but keeps the marker). It returns once they are gone or 5 s have
// passed. A process that cleared its environment and left the group
// (env -i setsid) is not found: see docs/security.md.
//
// The marker is looked for until two scans in a row find nothing: a
// process in the middle of an exec shows an empty environment for an
// instant, and a single scan can miss it.
func EndHelper(pgid int, marker string) {
	if pgid > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(5 * time.Second)
	for clean := 0; clean < 2 && time.Now().Before(deadline); {
		if KillSession(marker, time.Until(deadline)) == 0 {
			clean++
		} else {
			clean = 0
		}
		time.Sleep(10 * time.Millisecond)
	}
}
